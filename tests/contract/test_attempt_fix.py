"""What a failure says reaches whoever reads it, on every driver: a handler's JobsError fix is
stored with its attempt and shown with the dead letter (the job's detail, its group), and an
error whose text PostgreSQL cannot store (a NUL, a lone surrogate) settles its attempt with that
text escaped instead of failing the settle and losing the error to a lapsed lease."""

from __future__ import annotations

from engine.api import Engine
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import JobsError
from engine.ids import IdFactory
from engine.introspect import Introspector, parse_filter
from engine.jobs import job
from engine.retry import RetryPolicy, register_error_retry
from engine.types import JobState
from tests.engine.test_worker import Q, next_of, running

register_error_retry({"X_TEST_CARD_DECLINED": "terminal"})
FIX = "jobsctl retry ID once the customer has updated their card"
UNSTORABLE = "row 7: bad byte \x00 in b'\\xff' decoded as \udcff"
ESCAPED = "row 7: bad byte \\x00 in b'\\xff' decoded as \\udcff"


@job(name="fix.declined", queue=Q, idempotency_key=lambda inp: str(inp["n"]), retry=RetryPolicy(attempts=3))
async def declined(ctx, inp):  # type: ignore[no-untyped-def]
    if inp["n"] == 1:
        raise JobsError("X_TEST_CARD_DECLINED", "the issuer declined card ending 4242", FIX)
    raise ValueError("the gateway answered 500")


@job(name="fix.unstorable", queue=Q, idempotency_key=lambda inp: str(inp["n"]), retry=RetryPolicy(attempts=1))
async def unstorable(ctx, inp):  # type: ignore[no-untyped-def]
    if inp["n"] == 2:
        await ctx.step.run("parse", _parse)
    raise ValueError(UNSTORABLE)


def _parse() -> None:
    raise ValueError(UNSTORABLE)


async def test_a_handlers_fix_is_stored_with_its_attempt_and_shown_with_its_dead_letter(
    driver: Driver, clock: FakeClock
) -> None:
    eng = Engine(driver, clock=clock, ids=IdFactory(clock, seed=51))
    intro = Introspector(driver, clock=clock)
    async with running(driver, clock, declined) as (w, seen):  # type: ignore[arg-type]
        coded = await eng.aenqueue(declined, {"n": 1})
        assert (await next_of(seen)).outcome == "dead"
        plain = await eng.aenqueue(declined, {"n": 2})
        assert (await next_of(seen)).outcome == "retried"
    attempts = await driver.job_attempts(job_id=coded.id)
    assert [(a.outcome, a.fix) for a in attempts] == [("dead", FIX)]
    detail = await intro.job(coded.id)
    assert detail.job.state is JobState.DEAD and detail.fix == FIX
    (group,) = (await intro.dead_letters(parse_filter("name=fix.declined"))).groups
    assert (group.error_code, group.last_job_id, group.last_fix) == ("X_TEST_CARD_DECLINED", coded.id, FIX)
    # An exception that is not a JobsError names no fix.
    assert [a.fix for a in await driver.job_attempts(job_id=plain.id)] == [None]
    assert (await intro.job(plain.id)).fix is None


async def test_an_error_holding_a_nul_or_a_lone_surrogate_settles_its_attempt_escaped(
    driver: Driver, clock: FakeClock
) -> None:
    eng = Engine(driver, clock=clock, ids=IdFactory(clock, seed=52))
    async with running(driver, clock, unstorable) as (w, seen):  # type: ignore[arg-type]
        handler = await eng.aenqueue(unstorable, {"n": 1})
        first = await next_of(seen)
        step = await eng.aenqueue(unstorable, {"n": 2})
        second = await next_of(seen)
    assert (first.outcome, second.outcome) == ("dead", "dead")  # settled, not "settle-failed"
    row = await driver.job_get(job_id=handler.id)
    assert row is not None and row.state is JobState.DEAD
    assert row.last_error == f"ValueError: {ESCAPED} [stop: attempts-exhausted at attempt 1 of 1]"
    (attempt,) = await driver.job_attempts(job_id=handler.id)
    assert attempt.traceback is not None and attempt.traceback.endswith(f"ValueError: {ESCAPED}")
    (parse,) = await driver.step_list(job_id=step.id)
    assert (parse.status, parse.error) == ("failed", f"ValueError: {ESCAPED}")
