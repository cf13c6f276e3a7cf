"""A bulk action given its confirmed dry run changes what that dry run counted and nothing that came
to match after it: a job enqueued since is not cancelled, a job dead since is neither retried nor
discarded, and no more jobs change than it matched. A dry run of another action or filter is
refused before anything changes."""

from __future__ import annotations

from datetime import timedelta

import pytest

from engine.actions import Operator
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import JobsError
from engine.ids import IdFactory
from engine.projections import BulkAction, JobFilter
from engine.testing import make_job
from engine.types import JobState


def op(driver: Driver, clock: FakeClock) -> Operator:
    return Operator(driver, clock=clock, actor="alice")


async def _state(driver: Driver, job_id: str) -> JobState | None:
    row = await driver.job_get(job_id=job_id)
    return None if row is None else row.state


async def test_a_bulk_cancel_given_its_dry_run_leaves_a_job_enqueued_since_alone(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    counted = [await make_job(driver, ids, clock.now()) for _ in range(2)]
    plan = await op(driver, clock).plan("cancel", JobFilter(queue="default"))
    assert plan.matched == 2
    clock.advance(5)
    since = await make_job(driver, ids, clock.now())  # arrived while the confirmation was open
    res = await op(driver, clock).bulk("cancel", JobFilter(queue="default"), plan=plan)
    assert (res.changed, res.skipped) == (2, 0)
    assert [await _state(driver, j.id) for j in counted] == [JobState.CANCELLED] * 2
    assert await _state(driver, since.id) is JobState.READY


@pytest.mark.parametrize("action", ["retry", "discard"])
async def test_a_bulk_retry_or_discard_given_its_dry_run_leaves_a_job_dead_since_alone(
    driver: Driver, ids: IdFactory, clock: FakeClock, action: BulkAction
) -> None:
    counted = [await make_job(driver, ids, clock.now(), state=JobState.DEAD) for _ in range(2)]
    plan = await op(driver, clock).plan(action, JobFilter(state=JobState.DEAD))
    clock.advance(5)
    since = await make_job(driver, ids, clock.now(), state=JobState.DEAD)
    res = await op(driver, clock).bulk(action, JobFilter(state=JobState.DEAD), plan=plan)
    assert res.changed == 2
    assert JobState.DEAD not in [await _state(driver, j.id) for j in counted]
    assert await _state(driver, since.id) is JobState.DEAD
    unbounded = await op(driver, clock).bulk(action, JobFilter(state=JobState.DEAD))  # without it: every match
    assert unbounded.changed == 1 and await _state(driver, since.id) is not JobState.DEAD


async def test_a_bulk_given_its_dry_run_changes_no_more_jobs_than_it_matched(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    for _ in range(2):
        await make_job(driver, ids, clock.now(), state=JobState.DEAD)
    plan = await op(driver, clock).plan("retry", JobFilter(state=JobState.DEAD))
    # A process whose clock runs behind settles one more, stamped before the dry run's instant.
    await make_job(driver, ids, clock.now() - timedelta(seconds=1), state=JobState.DEAD)
    res = await op(driver, clock).bulk("retry", JobFilter(state=JobState.DEAD), plan=plan, batch_size=1)
    assert res.changed == 2
    left = await driver.job_page(
        where=JobFilter(state=JobState.DEAD), limit=10, cursor=None, count_cap=10, budget_ms=None
    )
    assert len(left.items) == 1  # one of the three stays dead: the count holds where the instant could not


async def test_a_retry_with_children_given_its_dry_run_leaves_a_job_dead_since_alone(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    counted = await make_job(driver, ids, clock.now(), state=JobState.DEAD)
    plan = await op(driver, clock).plan("retry", JobFilter(state=JobState.DEAD))
    clock.advance(5)
    since = await make_job(driver, ids, clock.now(), state=JobState.DEAD)
    got = [r async for r in op(driver, clock).retry_all_with_children(JobFilter(state=JobState.DEAD), plan=plan)]
    assert [r.job_id for r in got] == [counted.id]
    assert await _state(driver, since.id) is JobState.DEAD


async def test_a_dry_run_of_another_action_or_filter_is_refused_and_nothing_changes(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    dead = await make_job(driver, ids, clock.now(), state=JobState.DEAD)
    plan = await op(driver, clock).plan("retry", JobFilter(state=JobState.DEAD))
    for action, where in (("discard", JobFilter(state=JobState.DEAD)), ("retry", JobFilter(queue="other"))):
        with pytest.raises(JobsError) as err:
            await op(driver, clock).bulk(action, where, plan=plan)  # type: ignore[arg-type]
        assert err.value.code == "X_INVALID_ARGUMENT" and "plan=" in err.value.cause
    assert await _state(driver, dead.id) is JobState.DEAD
