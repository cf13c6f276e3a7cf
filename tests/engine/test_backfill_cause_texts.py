"""A backfill start's refusals say what is so, on every driver: X_BACKFILL_RUNNING says whether the
live pass is queued or running (a queued one has no batch yet), and X_BACKFILL_APPLIED says when
the pass completed as a person reads a time: UTC to the second, with its age."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from engine.backfills import BackfillControl, Backfills, Batch
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.records import BackfillRun
from engine.testing import make_job
from engine.types import JobState

NAME = "flags"
PASS = f"backfill:{NAME}"


def _control(driver: Driver, clock: FakeClock) -> BackfillControl:
    bf = Backfills(version="1")

    @bf.backfill(NAME, source=lambda conn, after, size: ([], after), count=lambda conn: 0)
    def flags(batch: Batch) -> None:
        pass

    return BackfillControl(driver, bf, environment="production", clock=clock)


async def test_a_start_refused_by_a_queued_pass_says_it_is_queued(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    job = await make_job(driver, ids, clock.now(), state=JobState.READY, name=PASS, queue="backfills", key="pass")
    gate = await _control(driver, clock).gate(NAME)
    assert gate is not None and gate.code == "X_BACKFILL_RUNNING" and gate.fix == f"jobsctl show {job.id}"
    assert "already has its one live pass, queued:" in gate.cause and job.id not in gate.cause  # the fix names it
    assert gate.cause.endswith("it starts at a worker's next claim")


async def test_a_start_refused_by_a_running_pass_says_it_is_running_not_queued(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    job = await make_job(driver, ids, clock.now(), state=JobState.RUNNING, name=PASS, queue="backfills", key="pass")
    gate = await _control(driver, clock).gate(NAME)
    assert gate is not None and gate.code == "X_BACKFILL_RUNNING"
    assert "already has its one live pass, running:" in gate.cause and "queued" not in gate.cause
    assert job.id not in gate.cause and gate.fix == f"jobsctl show {job.id}"  # the id, said once
    assert gate.cause.endswith("its step trace names the batch it is on")


async def test_an_applied_refusal_says_when_the_pass_completed_in_utc_to_the_second_with_its_age(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    job = await make_job(driver, ids, clock.now(), state=JobState.RUNNING, name=PASS, queue="backfills", key="pass")
    run: Any = BackfillRun(ids.new(), NAME, "production", job.id, "queued", False, False, clock.now())
    assert await driver.backfill_open(run=run)
    assert await driver.backfill_begin(run_id=run.id, planned=0, now=clock.now())
    clock.advance(0.123456)  # a finish to the microsecond
    assert await driver.backfill_finish(
        run_id=run.id, outcome="completed", swept=0, batches=0, error=None, now=clock.now()
    )
    await driver.job_cancel(job_id=job.id, tenant=None, now=clock.now(), actor="alice")  # no pass is live now
    clock.advance(timedelta(days=2, hours=23).total_seconds())
    gate = await _control(driver, clock).gate(NAME, write=True)
    assert gate is not None and gate.code == "X_BACKFILL_APPLIED", gate
    assert f"completed as run {run.id} at 2026-01-01 12:00:00 UTC (2d23h ago) in production;" in gate.cause
    assert ".123" not in gate.cause and "T12:00" not in gate.cause
