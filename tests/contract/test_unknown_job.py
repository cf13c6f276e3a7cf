"""A job its claiming worker does not declare (a rolling deploy: the producers run the release
that declares it before the workers do), on every driver: parked for a worker that knows it,
burning no attempt, said by the job's and the queue's why; a worker that knows it runs it; no
worker knowing it for UNKNOWN_GRACE since it first fell due makes it dead as X_UNKNOWN_JOB
(terminal). It used to burn its attempts at once: dead within seconds of a deploy."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from engine.api import Engine
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.introspect import Introspector
from engine.jobs import job
from engine.retry import UNKNOWN_GRACE
from engine.types import JobState
from tests.engine.test_worker import Q, fast, next_of, running


@job(name="deploy.new_report", queue=Q, idempotency_key=lambda inp: str(inp["n"]))
async def new_report(ctx, inp):  # type: ignore[no-untyped-def]
    return {"n": inp["n"]}


async def test_a_job_no_claiming_worker_declares_is_parked_without_an_attempt_until_one_does(
    driver: Driver, clock: FakeClock
) -> None:
    eng = Engine(driver, clock=clock, ids=IdFactory(clock, seed=61))
    r = await eng.aenqueue(new_report, {"n": 1})  # the new release's producer
    due = clock.now()
    async with running(driver, clock, fast) as (old, seen):  # a worker of the old release
        parked = await next_of(seen)
    assert (parked.job_id, parked.outcome) == (r.id, "parked")
    row = await driver.job_get(job_id=r.id)
    assert row is not None and (row.state, row.attempt, row.last_error) == (JobState.PARKED, 0, None)
    assert row.run_at == due + timedelta(seconds=5) and row.wait is not None and row.wait["kind"] == "unknown"
    why = await Introspector(eng).why_job(r.id)
    assert why.causes[0].kind == "unknown" and f"does not know job {new_report.name!r}" in why.causes[0].text
    assert "dead as X_UNKNOWN_JOB" in why.causes[0].text
    queue = await Introspector(eng).why_queue(Q)
    assert any(c.kind == "unknown" and "waits for a worker that knows its job" in c.text for c in queue.causes)
    clock.advance(5)
    async with running(driver, clock, fast, new_report) as (new, seen):  # the new release's worker
        done = await next_of(seen)
    assert (done.job_id, done.outcome, done.attempt) == (r.id, "completed", 1)


async def test_a_job_no_worker_declares_for_the_grace_is_dead_as_x_unknown_job(
    driver: Driver, clock: FakeClock
) -> None:
    eng = Engine(driver, clock=clock, ids=IdFactory(clock, seed=62))
    r = await eng.aenqueue(new_report, {"n": 2})
    outcomes = []
    # The clock moves only between workers: a worker idle on the fake clock would sleep through it.
    for wait in (0, UNKNOWN_GRACE - 1, 60):  # first claimed, 9:59 later, then past the grace
        clock.advance(wait)
        async with running(driver, clock, fast) as (w, seen):
            ex = await next_of(seen)
        outcomes.append(ex.outcome)
        row = await driver.job_get(job_id=r.id)
        assert row is not None
        if ex.outcome == "parked":  # tried again 5 s after it first fell due, then a minute apart at most
            assert row.run_at == clock.now() + timedelta(seconds=5 if wait == 0 else 60)
    assert outcomes == ["parked", "parked", "dead"]
    assert (ex.job_id, ex.stop_reason, ex.error_code, ex.attempt) == (r.id, "terminal", "X_UNKNOWN_JOB", 1)
    assert row.state is JobState.DEAD and row.last_error is not None and "X_UNKNOWN_JOB" in row.last_error


async def test_a_worker_logs_unknown_jobs_once_a_minute_a_name_with_the_count_it_parked(
    driver: Driver, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """A deploy's backlog of new jobs must not flood the old workers' logs."""
    caplog.set_level(logging.INFO, logger="jobs")
    eng = Engine(driver, clock=clock, ids=IdFactory(clock, seed=63))
    for n in range(3):
        await eng.aenqueue(new_report, {"n": 10 + n})
    async with running(driver, clock, fast) as (w, seen):
        assert [(await next_of(seen)).outcome for _ in range(3)] == ["parked"] * 3
        logged = [r for r in caplog.records if r.getMessage() == "jobs.worker.unknown-job"]
        assert len(logged) == 1 and logged[0].fields["name"] == new_report.name  # type: ignore[attr-defined]
        clock.advance(61)  # every parked job is due again, and a minute has passed
        await eng.aenqueue(new_report, {"n": 13})  # its NOTIFY wakes a worker idle on the fake clock
        assert [(await next_of(seen)).outcome for _ in range(4)] == ["parked"] * 4
    logged = [r for r in caplog.records if r.getMessage() == "jobs.worker.unknown-job"]
    assert [r.fields["parked_since_last"] for r in logged] == [0, 2]  # type: ignore[attr-defined]
