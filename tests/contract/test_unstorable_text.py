"""Text PostgreSQL cannot store (a NUL character anywhere; a lone surrogate, which UTF-8 cannot
encode) is refused with a coded error before any driver sees it, on both drivers alike, and
nothing is written. The rule lives in one place (engine.codec.unstorable); text PostgreSQL does
store (control characters, non-BMP characters) goes through and reads back unchanged."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from engine.api import Engine
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import X_INPUT_NOT_JSON, X_INVALID_ARGUMENT, X_INVALID_DEFINITION, JobsError
from engine.introspect import Introspector
from engine.introspect.filters import make_filter
from engine.jobs import job
from engine.projections import JobFilter
from engine.runtime.step_checks import check_step_name
from engine.text import unstorable
from engine.types import JobState

NUL, SURROGATE = "a\x00b", "a\ud800b"
BAD = pytest.mark.parametrize("bad", [NUL, SURROGATE], ids=["nul", "surrogate"])


@job(name="text.plain", queue="text", idempotency_key=lambda inp: str(inp["k"]))
async def plain(ctx, inp):  # type: ignore[no-untyped-def]
    return None


def refused(code: str) -> Any:
    return pytest.raises(JobsError, match=f"^{code}: .*which PostgreSQL('s jsonb)? cannot store")


async def nothing_written(eng: Engine) -> None:
    page = await Introspector(eng).jobs(JobFilter(), limit=10)
    assert not page.items


def test_the_rule_names_the_character_and_its_position() -> None:
    assert unstorable(NUL) == "a NUL character (\\x00) at position 1"
    assert unstorable(SURROGATE) == "a lone surrogate (\\ud800) at position 1"
    assert unstorable("tab\tbell\x07 \U0001f600 héllo") is None


@BAD
async def test_an_enqueue_with_unstorable_text_is_refused_and_writes_nothing(
    driver: Driver, clock: FakeClock, bad: str
) -> None:
    eng = Engine(driver, clock=clock)
    with refused(X_INVALID_ARGUMENT):
        await eng.aenqueue(plain, {"k": 1}, tenant=bad)
    keyed = job(name="text.keyed", queue="text", idempotency_key=lambda inp: f"k{bad}")(plain.fn)
    with refused(X_INVALID_ARGUMENT):
        await eng.aenqueue(keyed, {"k": 1})
    with refused(X_INPUT_NOT_JSON):
        await eng.aenqueue(plain, {"k": 1, "note": bad})
    with refused(X_INPUT_NOT_JSON):
        await eng.aenqueue(plain, {"k": 1, bad: "as a key"})
    await nothing_written(eng)


@BAD
def test_a_job_declaring_unstorable_text_is_refused_at_declaration(bad: str) -> None:
    with refused(X_INVALID_DEFINITION):
        job(name=f"text.{bad}", queue="text", idempotency_key=lambda inp: "k")(plain.fn)
    with refused(X_INVALID_DEFINITION):
        job(name="text.q", queue=bad, idempotency_key=lambda inp: "k")(plain.fn)


@BAD
async def test_an_event_with_unstorable_text_is_refused_and_writes_nothing(
    driver: Driver, clock: FakeClock, bad: str
) -> None:
    eng = Engine(driver, clock=clock)
    with refused(X_INVALID_ARGUMENT):
        await eng.asend_event(f"evt.{bad}", {})
    with refused(X_INVALID_ARGUMENT):
        await eng.asend_event("evt", {}, tenant=bad)
    with refused(X_INPUT_NOT_JSON):
        await eng.asend_event("evt", {"v": bad})
    since = clock.now() - timedelta(hours=1)
    found = await driver.event_find(
        job_id=eng.ids.new(), name="evt", tenant=None, match={}, since=since, now=clock.now()
    )
    assert found is None


@BAD
async def test_a_filter_or_a_note_with_unstorable_text_is_refused(driver: Driver, clock: FakeClock, bad: str) -> None:
    eng = Engine(driver, clock=clock)
    r = await eng.aenqueue(plain, {"k": 1})
    intro = Introspector(eng)
    for where in (
        make_filter(tenant=bad),
        make_filter(queue=bad),
        make_filter(name=bad),
        make_filter(search=bad),
        make_filter(error_code=bad),
    ):
        with refused(X_INVALID_ARGUMENT):
            await intro.jobs(where)
    with refused(X_INVALID_ARGUMENT):
        await intro.jobs(make_filter(input_fields={"k": bad}))
    with refused(X_INVALID_ARGUMENT):
        await eng.operator(actor="alice").cancel(r.id, note=bad)
    with refused(X_INVALID_ARGUMENT):
        await eng.operator(actor="alice").pause(bad, create=True)
    with refused(X_INVALID_ARGUMENT):
        eng.operator(actor=bad)
    with refused(X_INVALID_ARGUMENT):
        check_step_name(f"step {bad}")
    assert (await eng.aget(r.id)).state is JobState.READY


async def test_text_postgres_stores_reads_back_unchanged(driver: Driver, clock: FakeClock) -> None:
    eng = Engine(driver, clock=clock)
    odd = "tab\tbell\x07 \U0001f600 héllo"
    r = await eng.aenqueue(plain, {"k": odd, "v": odd}, tenant=odd)
    row = await eng.aget(r.id, tenant=odd)
    assert (row.tenant, row.idempotency_key, row.input) == (odd, odd, {"k": odd, "v": odd})
