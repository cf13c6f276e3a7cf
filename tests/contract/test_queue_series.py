"""A queue's figures over time (the console's charts), the same from every driver: completions
and jobs gone dead per calendar minute, and the wait (due to claimed) and run (claimed to done)
percentiles of the minute's completions, read from the maintenance leader's rollup for settled
minutes and counted from the jobs after it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import JobsError
from engine.ids import IdFactory
from engine.introspect import Introspector
from engine.testing import Factory, make_job
from engine.types import JobState


def intro(driver: Driver, clock: FakeClock, **kw) -> Introspector:  # type: ignore[no-untyped-def]
    return Introspector(driver, clock=clock, **kw)


async def _ran(f: Factory, clock: FakeClock, *, wait: float, run: float, queue: str = "mail") -> None:
    """A job due now, claimed ``wait`` seconds later, completed ``run`` seconds after that."""
    row = await f.job(JobState.READY, queue=queue)
    clock.advance(wait)
    claim = await f.claim(row.id)
    clock.advance(run)
    await f.complete(claim)


async def test_the_minute_under_way_counts_completions_dead_and_latency_percentiles(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    f = Factory(driver, ids, clock)
    for wait, run in ((3, 2), (1, 4), (10, 1)):
        await _ran(f, clock, wait=wait, run=run)
    await make_job(driver, ids, clock.now(), state=JobState.DEAD, queue="mail")
    await _ran(f, clock, wait=5, run=5, queue="other")  # another queue's
    series = await intro(driver, clock).queue_series("mail")
    assert len(series.minutes) == 60 and series.minutes[-1].minute <= clock.now()
    last = series.minutes[-1]
    assert (last.completed, last.dead) == (3, 1)
    assert (last.wait_p50, last.wait_p95, last.run_p50) == (3.0, 10.0, 2.0)  # percentile_disc
    assert series.completed == 3 and series.dead == 1 and series.worst_wait() == 10.0
    assert all(m.completed == 0 and m.wait_p50 is None for m in series.minutes[:-1])


async def test_rolled_minutes_answer_the_same_figures_and_outlive_their_rows(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    f = Factory(driver, ids, clock)
    await _ran(f, clock, wait=2, run=1)
    await _ran(f, clock, wait=4, run=3)
    await make_job(driver, ids, clock.now(), state=JobState.DEAD, queue="mail")
    before = (await intro(driver, clock).queue_series("mail")).minutes[-1]
    clock.advance(180)  # the minute has settled
    term = await driver.leader_acquire(name="maintenance", holder="h", now=clock.now(), lease_seconds=3600)
    assert term is not None
    assert await driver.throughput_rollup(leader="maintenance", holder="h", term=term, now=clock.now(), settle=30.0)
    pruned = await driver.job_prune(
        leader="maintenance",
        holder="h",
        term=term,
        now=clock.now(),
        before=clock.now(),
        dead_before=clock.now(),
        limit=100,
    )
    assert len(pruned) == 3  # the rows are gone; the rollup keeps their minute
    series = await intro(driver, clock).queue_series("mail")
    rolled = next(m for m in series.minutes if m.minute == before.minute)
    assert rolled == before and (rolled.completed, rolled.dead, rolled.wait_p95) == (2, 1, 4.0)


async def test_queue_series_is_fleet_wide_and_refuses_a_tenant_scope(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    with pytest.raises(JobsError) as refused:
        await intro(driver, clock, tenant="acme").queue_series("mail")
    assert refused.value.code == "X_INVALID_ARGUMENT" and "fleet-wide" in refused.value.cause
    with pytest.raises(JobsError):
        await intro(driver, clock).queue_series(" ")
    empty = await intro(driver, clock).queue_series("nothing-here")
    assert empty.completed == 0 and len(empty.minutes) == 60
    assert empty.minutes[-1].minute == clock.now().replace(second=0, microsecond=0)
    assert empty.minutes[0].minute == empty.minutes[-1].minute - timedelta(minutes=59)
