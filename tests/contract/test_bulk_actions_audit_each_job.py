"""Each job a bulk retry, cancel or discard changes keeps its own audit entry naming who did it,
their note and the filter the action matched, on every driver; and the driver's discard of one job
is fenced on its state, so a job no longer dead when the statement runs is left whole."""

from __future__ import annotations

import pytest

from engine.actions import Operator
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.projections import BulkAction, JobFilter
from engine.testing import make_job
from engine.types import JobState

KIND = {"retry": "retried", "cancel": "cancelled", "discard": "discarded"}


@pytest.mark.parametrize("action", ["retry", "cancel", "discard"])
async def test_each_job_a_bulk_action_changes_is_audited_with_its_actor_note_and_filter(
    driver: Driver, ids: IdFactory, clock: FakeClock, action: BulkAction
) -> None:
    state = JobState.READY if action == "cancel" else JobState.DEAD
    jobs = [await make_job(driver, ids, clock.now(), state=state, queue="emails") for _ in range(3)]
    clock.advance(3)
    ops = Operator(driver, clock=clock, actor="alice")
    res = await ops.bulk(action, JobFilter(queue="emails"), note="INC-7 smtp fixed", batch_size=2)
    assert res.changed == 3
    for j in jobs:
        entries = [h for h in await driver.job_history(job_id=j.id) if h.kind == KIND[action]]
        assert len(entries) == 1, entries
        (h,) = entries
        assert (h.actor, h.note, h.at, h.data.get("bulk")) == ("alice", "INC-7 smtp fixed", clock.now(), "queue=emails")


@pytest.mark.parametrize("state", [JobState.READY, JobState.RUNNING, JobState.COMPLETED, JobState.CANCELLED])
async def test_the_drivers_discard_of_a_job_that_is_not_dead_changes_nothing(
    driver: Driver, ids: IdFactory, clock: FakeClock, state: JobState
) -> None:
    job = await make_job(driver, ids, clock.now(), state=state)
    before = await driver.job_history(job_id=job.id)
    res = await driver.job_discard(job_id=job.id, tenant=None, now=clock.now(), actor="alice", note="oops")
    assert res is not None and (res.changed, res.previous) == (False, state)
    assert await driver.job_get(job_id=job.id) == job
    assert await driver.job_history(job_id=job.id) == before
