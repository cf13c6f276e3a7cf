"""A bulk cancel given its dry run changes what the dry run counted: a job that came to match the
filter since (by a change of state) is left as it is, and a counted job that changed state since
but still matches a filter that does not read the state is cancelled, on every driver."""

from __future__ import annotations

from engine.actions import Operator
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.projections import JobFilter
from engine.testing import make_job
from engine.types import JobState


async def _claim_one(driver: Driver, clock: FakeClock, worker: str) -> None:
    await driver.worker_claim(queues=["default"], limit=1, worker=worker, now=clock.now(), lease_seconds=300)


async def test_a_job_that_came_to_match_after_the_dry_run_is_not_cancelled_in_place_of_a_counted_one(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    counted = await make_job(driver, ids, clock.now())
    clock.advance(1)
    later = await make_job(driver, ids, clock.now())
    await _claim_one(driver, clock, "w1")  # the oldest first: the counted one runs
    where = JobFilter(state=JobState.RUNNING)
    o = Operator(driver, clock=clock, actor="alice")
    plan = await o.plan("cancel", where)
    assert plan.matched == 1
    clock.advance(5)
    await _claim_one(driver, clock, "w2")  # came to match the filter since the dry run
    res = await o.bulk("cancel", where, plan=plan)
    assert res.changed == 1
    assert (await driver.job_get(job_id=counted.id)).state is JobState.CANCELLED  # type: ignore[union-attr]
    assert (await driver.job_get(job_id=later.id)).state is JobState.RUNNING  # type: ignore[union-attr]


async def test_a_counted_job_claimed_since_the_dry_run_is_cancelled_under_a_filter_without_a_state(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    a = await make_job(driver, ids, clock.now())
    clock.advance(1)
    b = await make_job(driver, ids, clock.now())
    where = JobFilter(queue="default")
    o = Operator(driver, clock=clock, actor="alice")
    plan = await o.plan("cancel", where)
    assert plan.matched == 2
    clock.advance(5)
    await _claim_one(driver, clock, "w1")  # a worker took one meanwhile: it still matches
    res = await o.bulk("cancel", where, plan=plan)
    assert res.changed == 2
    for job in (a, b):
        assert (await driver.job_get(job_id=job.id)).state is JobState.CANCELLED  # type: ignore[union-attr]
