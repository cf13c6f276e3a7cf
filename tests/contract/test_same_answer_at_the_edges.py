"""Both drivers give the same answer at the edges the main contract files pass by: a revival of a
row that is not dead, a dead-letter group's tenants when one is '' and one missing, an input
filter by a list or an object, a batch with one input that cannot be stored, and the order of a
bulk plan's groups when their counts tie."""

from __future__ import annotations

import pytest

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import X_INPUT_NOT_JSON, JobsError
from engine.ids import IdFactory
from engine.projections import JobFilter
from engine.testing import make_job
from engine.types import JobState, NewJob


async def test_a_retry_of_a_job_that_is_not_dead_names_no_holder_a_row_does_not_hold_its_own_key(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    row = await make_job(driver, ids, clock.now(), state=JobState.READY)
    res = await driver.job_retry_dead(job_id=row.id, tenant=None, now=clock.now(), actor="ann")
    assert res is not None and not res.changed
    assert res.duplicate_of is None and res.previous is JobState.READY


async def test_a_resume_of_a_pass_that_is_running_names_no_holder_a_row_does_not_hold_its_own_key(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    row = await make_job(driver, ids, clock.now(), state=JobState.RUNNING, name="backfill:x")
    res = await driver.backfill_pass_resume(job_id=row.id, now=clock.now(), actor="ann", note=None)
    assert res is not None and not res.changed
    assert res.duplicate_of is None and res.previous is JobState.RUNNING


async def test_a_dead_letter_groups_tenants_count_no_tenant_and_the_empty_one_once_as_the_dedupe_does(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    for tenant in (None, "", "acme"):
        await make_job(driver, ids, clock.now(), state=JobState.DEAD, tenant=tenant)
    d = await driver.dead_groups(where=JobFilter(), now=clock.now(), budget_ms=None)
    assert [(g.count, g.tenants) for g in d.groups] == [(3, 2)]


@pytest.mark.parametrize(
    ("stored", "wanted", "matches"),
    [
        ({"tags": ["a", "b"]}, ["a"], True),  # a list holds the values asked for, in any order
        ({"tags": ["a", "b"]}, ["b", "a"], True),
        ({"tags": ["a", "b"]}, ["c"], False),
        ({"tags": ["a", "b"]}, "a", False),  # a scalar is not a list holding it
        ({"tags": {"x": [1, 2]}}, {"x": [1]}, True),  # an object by its keys, recursively
        ({"tags": {"x": [1, 2]}}, {"y": 1}, False),
        ({"tags": 42}, 42.0, True),
        ({"tags": 42}, "42", False),
        ({"tags": 1}, True, False),
    ],
)
async def test_an_input_filter_matches_by_jsonb_containment_on_both_drivers(
    driver: Driver, ids: IdFactory, clock: FakeClock, stored: dict[str, object], wanted: object, matches: bool
) -> None:
    await make_job(driver, ids, clock.now(), input=stored)
    where = JobFilter(input_fields=(("tags", wanted),))
    page = await driver.job_page(where=where, limit=10, cursor=None, count_cap=100, budget_ms=None)
    assert len(page.items) == (1 if matches else 0)


async def test_a_batch_with_one_input_that_cannot_be_stored_writes_none_of_its_jobs(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    good = NewJob(ids.new(), "a", "q", "k1", {"n": 1}, 3)
    bad = NewJob(ids.new(), "a", "q", "k2", {"n": "nul\x00"}, 3)
    for write in (
        lambda: driver.job_enqueue(jobs=[good, bad], now=clock.now()),
        lambda: driver.job_enqueue_chunks(chunks=[[good], [bad]], now=clock.now()),
    ):
        with pytest.raises(JobsError) as err:
            await write()
        assert err.value.code == X_INPUT_NOT_JSON
        assert await driver.job_get(job_id=good.id) is None


async def test_a_bulk_plans_groups_that_tie_are_ordered_by_stop_code_and_tenant_a_missing_one_last(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    for tenant in ("acme corp", None, "acme"):
        await make_job(driver, ids, clock.now(), state=JobState.DEAD, tenant=tenant)
    plan = await driver.job_bulk_plan(action="retry", where=JobFilter(), now=clock.now(), budget_ms=None)
    assert [g.tenant for g in plan.groups] == ["acme", "acme corp", None]
