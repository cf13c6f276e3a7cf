"""A dead-letter group whose error code (or stop reason) is null, as rows from before every dead
letter got one are, matches only the dead letters without one: counting the group, listing its
jobs, a bulk plan over it and its retry or discard never reach the dead letters of another code.
A filter given no code still means any code."""

from __future__ import annotations

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.introspect.filters import describe_filter, group_filter, parse_filter
from engine.projections import NULL, DeadGroup, JobFilter
from engine.testing import Factory
from engine.types import JobState, StopReason

NAME = "charge_card"


async def _dead(f: Factory, *, code: str | None, stop: StopReason | None = "terminal") -> str:
    """A dead letter of NAME with this error code and stop reason (None: a null column)."""
    row = await f.job(JobState.READY, name=NAME)
    claim = await f.claim(row.id)
    assert await f.nack(claim, "dead", error="boom", error_code=code, stop_reason=stop)
    return row.id


async def _groups(driver: Driver, clock: FakeClock, where: JobFilter) -> list[tuple[str | None, str | None, int]]:
    d = await driver.dead_groups(where=where, now=clock.now(), budget_ms=None)
    return sorted(((g.error_code, g.stop_reason, g.count) for g in d.groups), key=repr)


async def _group(driver: Driver, clock: FakeClock, code: str | None, stop: str | None = "terminal") -> DeadGroup:
    d = await driver.dead_groups(where=JobFilter(), now=clock.now(), budget_ms=None)
    (g,) = [g for g in d.groups if (g.error_code, g.stop_reason) == (code, stop)]
    return g


async def _ids(driver: Driver, where: JobFilter) -> set[str]:
    page = await driver.job_page(where=where, limit=100, cursor=None, count_cap=1000, budget_ms=None)
    return {j.id for j in page.items}


async def test_a_dead_group_without_a_code_counts_and_lists_only_the_dead_letters_without_one(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    f = Factory(driver, ids, clock)
    nulls = {await _dead(f, code=None), await _dead(f, code=None)}
    await _dead(f, code="X_BOOM")
    where = group_filter(JobFilter(), await _group(driver, clock, None))
    assert where.error_code is NULL
    assert await _groups(driver, clock, where) == [(None, "terminal", 2)]
    assert await _ids(driver, where) == nulls


async def test_a_bulk_plan_retry_and_discard_of_a_group_without_a_code_reach_no_dead_letter_of_another_code(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    f = Factory(driver, ids, clock)
    nulls = {await _dead(f, code=None), await _dead(f, code=None)}
    other = await _dead(f, code="X_BOOM")
    where = group_filter(JobFilter(), await _group(driver, clock, None))
    plan = await driver.job_bulk_plan(action="discard", where=where, now=clock.now(), budget_ms=None)
    assert plan.matched == 2 and [(g.error_code, g.count) for g in plan.groups] == [(None, 2)]
    batch = await driver.job_bulk_apply(
        action="discard", where=where, now=clock.now(), actor="ann", note=None, label="x", limit=10, before=None
    )
    assert set(batch.changed) == nulls
    remaining = await driver.job_get(job_id=other)
    assert remaining is not None and remaining.state is JobState.DEAD
    # The group counts dropped the null group whole and kept the other one as it was.
    assert await _groups(driver, clock, JobFilter()) == [("X_BOOM", "terminal", 1)]
    # A retry of a group without a code, with another dead letter of none left, revives that one only.
    again = await _dead(f, code=None)
    batch = await driver.job_bulk_apply(
        action="retry", where=where, now=clock.now(), actor="ann", note=None, label="x", limit=10, before=None
    )
    assert batch.changed == (again,)
    assert await _groups(driver, clock, JobFilter()) == [("X_BOOM", "terminal", 1)]


async def test_a_dead_group_without_a_stop_reason_matches_only_the_dead_letters_without_one(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    f = Factory(driver, ids, clock)
    bare = await _dead(f, code="X_BOOM", stop=None)
    await _dead(f, code="X_BOOM", stop="terminal")
    where = group_filter(JobFilter(), await _group(driver, clock, "X_BOOM", None))
    assert (where.error_code, where.stop_reason) == ("X_BOOM", NULL)
    assert await _groups(driver, clock, where) == [("X_BOOM", None, 1)]
    assert await _ids(driver, where) == {bare}
    plan = await driver.job_bulk_plan(action="retry", where=where, now=clock.now(), budget_ms=None)
    assert plan.matched == 1


async def test_a_group_with_a_code_keeps_the_screens_filter_and_matches_that_code_only(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    f = Factory(driver, ids, clock)
    await _dead(f, code=None)
    boom = await _dead(f, code="X_BOOM")
    screen = JobFilter(queue="default", state=JobState.DEAD)
    where = group_filter(screen, await _group(driver, clock, "X_BOOM"))
    assert where == JobFilter(
        queue="default", state=JobState.DEAD, name=NAME, error_code="X_BOOM", stop_reason="terminal"
    )
    assert await _ids(driver, where) == {boom}


async def test_the_filter_word_code_dash_means_no_code_and_a_filter_without_a_code_means_any(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    f = Factory(driver, ids, clock)
    nulls = {await _dead(f, code=None)}
    boom = await _dead(f, code="X_BOOM")
    assert parse_filter("state=dead code=-") == JobFilter(state=JobState.DEAD, error_code=NULL)
    assert await _ids(driver, parse_filter("state=dead code=-")) == nulls
    assert await _ids(driver, parse_filter("state=dead code=")) == nulls | {boom}
    assert await _ids(driver, parse_filter("state=dead")) == nulls | {boom}
    assert await _groups(driver, clock, parse_filter(f"name={NAME} code=-")) == [(None, "terminal", 1)]
    # The words read back as they were given: a confirmation, the audit and the filter bar agree.
    for words in ("code=- stop=-", "code=X_BOOM stop=terminal", f"name={NAME} code=-"):
        assert describe_filter(parse_filter(words)) == words
