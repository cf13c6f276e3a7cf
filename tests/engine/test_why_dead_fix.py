"""A dead job's why says what to do about it, on every driver: the fix its last error recorded
(the one its detail shows), else the next step: `jobsctl retry ID` for a job that ran out of
attempts, `jobsctl show ID` (read the error) for one its handler stopped as terminal."""

from __future__ import annotations

from engine.api import Engine
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import JobsError
from engine.ids import IdFactory
from engine.introspect import Introspector
from engine.introspect.why import dead_cause
from engine.jobs import job
from engine.retry import RetryPolicy, register_error_retry
from engine.types import JobRow, JobState
from tests.engine.test_why import row
from tests.engine.test_worker import Q, next_of, running

register_error_retry({"X_TEST_DEAD_FIX_DECLINED": "terminal"})
FIX = "jobsctl retry ID once the customer has updated their card"


@job(name="whyfix.declined", queue=Q, idempotency_key=lambda inp: str(inp["n"]), retry=RetryPolicy(attempts=1))
async def declined(ctx, inp):  # type: ignore[no-untyped-def]
    if inp["n"] == 1:
        raise JobsError("X_TEST_DEAD_FIX_DECLINED", "the issuer declined card ending 4242", FIX)
    raise ValueError("the gateway answered 500")


async def test_a_dead_jobs_why_carries_the_fix_its_last_error_recorded(driver: Driver, clock: FakeClock) -> None:
    eng = Engine(driver, clock=clock, ids=IdFactory(clock, seed=61))
    intro = Introspector(driver, clock=clock)
    async with running(driver, clock, declined) as (w, seen):  # type: ignore[arg-type]
        coded = await eng.aenqueue(declined, {"n": 1})
        assert (await next_of(seen)).outcome == "dead"
    for why in (await intro.why_job(coded.id), (await intro.job(coded.id)).why):
        (dead,) = why.causes
        assert dead.kind == "dead" and dead.fix == FIX
        assert dead.text == "Dead: X_TEST_DEAD_FIX_DECLINED after attempt 1 of 1 (terminal)."
    assert (await intro.why(coded.id)).causes[0].fix == FIX  # `jobsctl why ID` reads the same


async def test_a_dead_job_whose_error_named_no_fix_is_offered_a_retry_when_it_ran_out_of_attempts(
    driver: Driver, clock: FakeClock
) -> None:
    eng = Engine(driver, clock=clock, ids=IdFactory(clock, seed=62))
    intro = Introspector(driver, clock=clock)
    async with running(driver, clock, declined) as (w, seen):  # type: ignore[arg-type]
        plain = await eng.aenqueue(declined, {"n": 2})
        assert (await next_of(seen)).outcome == "dead"
    (dead,) = (await intro.why_job(plain.id)).causes
    assert dead.fix == f"jobsctl retry {plain.id}" and dead.stop_reason == "attempts-exhausted"
    assert dead.text.endswith("Its error named no fix; once its cause is dealt with, run it again from attempt 1.")


def test_a_terminal_death_without_a_fix_points_at_its_error_not_at_a_retry() -> None:
    dead: JobRow = row(JobState.DEAD, attempt=1, stop_reason="terminal", error_code="X_TEST_DEAD_FIX_DECLINED")
    cause = dead_cause(dead, None)
    assert cause.fix == f"jobsctl show {dead.id}"
    assert "a retry fails the same way" in cause.text and cause.fix not in cause.text


def test_jobsctl_why_prints_a_dead_jobs_fix_on_a_line_of_its_own(pg_dsn: str) -> None:
    from typer.testing import CliRunner

    from engine.cli import app
    from tests.engine.test_cli_introspect import seed

    (dead,) = seed(pg_dsn, JobState.DEAD)
    r = CliRunner().invoke(app, ["why", dead.id, "--dsn", pg_dsn], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("- [dead]"))
    assert lines[at + 1] == f"  fix: jobsctl show {dead.id}", r.stdout  # terminal: read its error first
