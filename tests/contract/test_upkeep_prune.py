"""The row pruner (job_prune) at its edges, run against every driver: a settled row goes once it
finished strictly before its cut-off (completed and cancelled rows ``before``, dead letters
``dead_before``), a live row never does however old it is, and a pass with nothing past retention,
a zero limit or a caller that is not the leader at its term deletes nothing."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.testing import make_job
from engine.types import JobState

NAME = "maintenance"
US = timedelta(microseconds=1)


async def _lead(driver: Driver, clock: FakeClock, holder: str = "m") -> int:
    term = await driver.leader_acquire(name=NAME, holder=holder, now=clock.now(), lease_seconds=3600)
    assert term is not None
    return term


async def _prune(
    driver: Driver,
    clock: FakeClock,
    term: int,
    *,
    before: datetime,
    dead_before: datetime,
    holder: str = "m",
    limit: int = 100,
) -> set[str]:
    pruned = await driver.job_prune(
        leader=NAME,
        holder=holder,
        term=term,
        now=clock.now(),
        before=before,
        dead_before=dead_before,
        limit=limit,
    )
    assert len(pruned) == len(set(pruned))  # each row once
    return set(pruned)


async def test_a_settled_row_finished_exactly_at_its_cutoff_is_kept_and_goes_a_microsecond_later(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    t = clock.now()
    completed = await make_job(driver, ids, t, state=JobState.COMPLETED)
    cancelled = await make_job(driver, ids, t, state=JobState.CANCELLED)
    dead = await make_job(driver, ids, t, state=JobState.DEAD)
    assert completed.finished_at == cancelled.finished_at == dead.finished_at == t
    clock.advance(86400)
    term = await _lead(driver, clock)
    assert await _prune(driver, clock, term, before=t, dead_before=t) == set()
    # Past the cut-off of completed and cancelled rows, not yet past the dead letters' own.
    assert await _prune(driver, clock, term, before=t + US, dead_before=t) == {completed.id, cancelled.id}
    assert await driver.job_get(job_id=dead.id) is not None
    assert await _prune(driver, clock, term, before=t + US, dead_before=t + US) == {dead.id}


async def test_a_dead_letters_cutoff_is_its_own_whichever_of_the_two_is_later(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    t = clock.now()
    completed = await make_job(driver, ids, t, state=JobState.COMPLETED)
    dead = await make_job(driver, ids, t, state=JobState.DEAD)
    clock.advance(60)
    term = await _lead(driver, clock)
    # A dead-letter retention shorter than the others' (an app may keep failures a shorter time)
    assert await _prune(driver, clock, term, before=t, dead_before=clock.now()) == {dead.id}
    assert await driver.job_get(job_id=completed.id) is not None


async def test_the_pruner_never_deletes_a_live_row_however_long_ago_it_was_written(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    long_ago = clock.now()
    live = [
        await make_job(driver, ids, long_ago, state=state, queue=f"q-{state.value}")
        for state in (JobState.READY, JobState.DELAYED, JobState.RUNNING, JobState.PARKED, JobState.SUSPENDED)
    ]
    clock.advance(365 * 86400)
    term = await _lead(driver, clock)
    assert await _prune(driver, clock, term, before=clock.now(), dead_before=clock.now()) == set()
    for row in live:
        assert await driver.job_get(job_id=row.id) == row


async def test_a_pass_with_nothing_past_retention_or_a_zero_limit_prunes_nothing(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    term = await _lead(driver, clock)
    assert await _prune(driver, clock, term, before=clock.now(), dead_before=clock.now()) == set()  # no job at all
    done = await make_job(driver, ids, clock.now(), state=JobState.COMPLETED)
    attempts = await driver.job_attempts(job_id=done.id)
    assert attempts  # its completed attempt, kept with it
    clock.advance(60)
    assert await _prune(driver, clock, term, before=clock.now() - timedelta(days=7), dead_before=clock.now()) == set()
    assert await _prune(driver, clock, term, before=clock.now(), dead_before=clock.now(), limit=0) == set()
    assert await driver.job_get(job_id=done.id) == done
    assert await driver.job_attempts(job_id=done.id) == attempts


async def test_the_pruner_does_nothing_for_another_holder_a_stale_term_or_another_name(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    done = await make_job(driver, ids, clock.now(), state=JobState.COMPLETED)
    clock.advance(60)
    term = await _lead(driver, clock)
    window: dict[str, Any] = {"before": clock.now(), "dead_before": clock.now()}
    assert await _prune(driver, clock, term, holder="other", **window) == set()
    assert await _prune(driver, clock, term + 1, **window) == set()
    assert await _prune(driver, clock, term - 1, **window) == set()
    held = await driver.leader_acquire(name="scheduler", holder="s", now=clock.now(), lease_seconds=60)
    assert held == term
    pruned = await driver.job_prune(leader="scheduler", holder="m", term=term, now=clock.now(), limit=10, **window)
    assert pruned == []
    assert await driver.job_get(job_id=done.id) == done
    assert await _prune(driver, clock, term, **window) == {done.id}
