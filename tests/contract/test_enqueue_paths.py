"""The Postgres driver's enqueue paths (one row: job_enqueue_one; a batch: job_enqueue; a batch
past engine.api.CHUNK: job_enqueue a chunk, pipelined in one transaction) mean the same thing on
both drivers: the single-row path a plain `enqueue()` takes, and the chunked one."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from engine import api
from engine.api import Engine, Enqueue
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.drivers.migrations import schema_sql
from engine.drivers.sqlfiles import load_queries
from engine.errors import X_INPUT_NOT_JSON, JobsError
from engine.ids import IdFactory
from engine.jobs import job
from engine.projections import JobFilter
from engine.testing import make_job
from engine.types import JobState, NewJob


def _new(ids: IdFactory, key: str, **kw: object) -> NewJob:
    return NewJob(
        id=ids.new(),
        name="send_email",
        queue="default",
        idempotency_key=key,
        input={"user_id": 7},
        max_attempts=3,
        **kw,
    )  # type: ignore[arg-type]


def test_i2_single_row_enqueue_spells_the_dedupe_index_exactly() -> None:
    norm = lambda s: re.sub(r"\s+", " ", s).strip().lower()  # noqa: E731
    defined = re.findall(
        r"create unique index job_dedupe_live_v3 on jobs.job \((.*?)\) where state in \((.*?)\);",
        norm(schema_sql()),
    )
    assert defined
    spelled, live_states = defined[-1]  # the installed definition; the conflict target names no opclass
    one = norm(load_queries()["job_enqueue_one"].text)
    assert f"on conflict ({spelled.removesuffix(' text_pattern_ops')}) where state in ({live_states}) do nothing" in one


async def test_i2_single_enqueue_answers_the_live_row_of_its_own_tenant(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    now = clock.now()
    acme = await make_job(driver, ids, now, tenant="acme", key="invoice:1")
    other = (await driver.job_enqueue(jobs=[_new(ids, "invoice:1", tenant="globex")], now=now))[0]
    assert not other.deduped and other.id != acme.id
    again = (await driver.job_enqueue(jobs=[_new(ids, "invoice:1", tenant="acme")], now=now))[0]
    assert again.deduped and again.id == acme.id and again.state is JobState.READY
    done = await make_job(driver, ids, now, state=JobState.COMPLETED, key="order:9")
    fresh = (await driver.job_enqueue(jobs=[_new(ids, "order:9")], now=now))[0]
    assert not fresh.deduped and fresh.id != done.id  # a final row holds no key


async def test_single_enqueue_state_follows_run_at(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    now = clock.now()
    later = (await driver.job_enqueue(jobs=[_new(ids, "a", run_at=now + timedelta(seconds=5))], now=now))[0]
    due = (await driver.job_enqueue(jobs=[_new(ids, "b", run_at=now - timedelta(seconds=5))], now=now))[0]
    plain = (await driver.job_enqueue(jobs=[_new(ids, "c", priority=3)], now=now))[0]
    assert (later.state, due.state, plain.state) == (JobState.DELAYED, JobState.READY, JobState.READY)
    row = await driver.job_get(job_id=plain.id)
    assert row is not None and row.priority == 3 and row.input == {"user_id": 7} and row.run_at == now


@job(name="chunked_email", queue="mail", idempotency_key=lambda inp: f"user:{inp['user_id']}")
def chunked_email(ctx: object, inp: dict[str, int]) -> None:
    return None


async def test_a_batch_past_a_chunk_answers_every_row_in_order_and_dedupes_across_chunks(
    driver: Driver, ids: IdFactory, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(api, "CHUNK", 2)  # 7 rows: four statements, one transaction (Postgres)
    eng = Engine(driver, clock=clock, ids=ids)
    held = await eng.aenqueue(chunked_email, {"user_id": 9})  # live before the batch
    users = [1, 2, 3, 1, 9, 4, 3]  # 1 and 3 again in later chunks, 9 held already
    got = await eng.aenqueue_many([Enqueue(chunked_email, {"user_id": u}) for u in users])
    assert [r.deduped for r in got] == [False, False, False, True, True, False, True]
    assert got[3].id == got[0].id and got[6].id == got[2].id and got[4].id == held.id
    assert len({r.id for r in got}) == 5
    for r, u in zip(got, users):
        row = await driver.job_get(job_id=r.id)
        assert row is not None and row.input == {"user_id": u} and row.state is JobState.READY


async def test_a_row_that_fails_its_checks_in_a_later_chunk_leaves_nothing_written(
    driver: Driver, ids: IdFactory, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(api, "CHUNK", 2)
    eng = Engine(driver, clock=clock, ids=ids)
    specs = [Enqueue(chunked_email, {"user_id": u}) for u in range(5)]
    specs.append(Enqueue(chunked_email, {"user_id": 5, "ratio": float("nan")}))  # the third chunk
    with pytest.raises(JobsError) as err:
        await eng.aenqueue_many(specs)
    assert err.value.code == X_INPUT_NOT_JSON
    page = await driver.job_page(where=JobFilter(), limit=50, cursor=None, count_cap=100, budget_ms=None)
    assert page.items == ()  # the two chunks sent before it were rolled back
    again = await eng.aenqueue_many(specs[:5])  # and nothing holds their keys
    assert not any(r.deduped for r in again)


async def test_a_batch_may_be_given_as_a_generator(
    driver: Driver, ids: IdFactory, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(api, "CHUNK", 2)
    eng = Engine(driver, clock=clock, ids=ids)
    got = await eng.aenqueue_many(Enqueue(chunked_email, {"user_id": u}) for u in range(5))
    assert len(got) == 5 and not any(r.deduped for r in got)
