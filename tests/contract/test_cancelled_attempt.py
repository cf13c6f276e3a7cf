"""A running job that is cancelled leaves its attempt on record (outcome cancelled), on every driver;
a job cancelled before it ran has no attempt."""

from __future__ import annotations

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.types import JobState
from tests.contract.test_worker_drivers import _new


async def test_a_cancelled_running_job_records_its_attempt_as_cancelled(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    jid = (await driver.job_enqueue(jobs=[_new(ids, max_attempts=2)], now=clock.now()))[0].id
    (cj,) = (
        await driver.worker_claim(queues=["default"], limit=1, worker="w1", now=clock.now(), lease_seconds=30)
    ).jobs
    clock.advance(5)
    res = await driver.job_cancel(job_id=jid, tenant=None, now=clock.now(), actor="ops")
    assert res is not None and res.cancelled and res.was_running
    row = await driver.job_get(job_id=jid)
    assert row is not None and (row.state, row.attempt, row.max_attempts) == (JobState.CANCELLED, 1, 2)
    (att,) = await driver.job_attempts(job_id=jid)
    assert (att.outcome, att.attempt, att.run, att.worker) == ("cancelled", 1, cj.row.run, "w1")
    assert (att.started_at, att.finished_at) == (cj.row.claimed_at, clock.now())
    # A second cancel changes nothing and records nothing more.
    again = await driver.job_cancel(job_id=jid, tenant=None, now=clock.now(), actor="ops")
    assert again is not None and not again.cancelled
    assert len(await driver.job_attempts(job_id=jid)) == 1


async def test_a_job_cancelled_before_it_ran_has_no_attempt(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    jid = (await driver.job_enqueue(jobs=[_new(ids)], now=clock.now()))[0].id
    await driver.job_cancel(job_id=jid, tenant=None, now=clock.now(), actor="ops")
    assert await driver.job_attempts(job_id=jid) == []
