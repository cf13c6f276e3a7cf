"""A worker is stale once it missed more than REAP_BEATS of its own heartbeats, or once its
heartbeat is older than the view's stale_after, whichever is later: the interval it registered
with is on its row. The workers view, the queues view's live workers and the why of a queue and
of a job read the same rule; a row without its interval (a worker of the release before 0021)
keeps stale_after alone. On every driver."""

from __future__ import annotations

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.introspect import Introspector
from engine.runtime.worker_config import REAP_BEATS
from engine.testing import make_job
from engine.types import WorkerRegistration

STALE_AFTER = 30.0


async def _register(driver: Driver, clock: FakeClock, wid: str, interval: float | None) -> None:
    await driver.worker_register(
        worker=WorkerRegistration(
            id=wid, host="h", pid=1, queues=("default",), concurrency=2, heartbeat_interval=interval
        ),
        now=clock.now(),
    )


async def test_a_worker_beating_each_minute_is_stale_only_once_it_missed_more_than_three_of_its_beats(
    driver: Driver, clock: FakeClock
) -> None:
    assert REAP_BEATS == 3
    await _register(driver, clock, "w-fast", 5.0)
    await _register(driver, clock, "w-slow", 60.0)
    (fast, slow) = await driver.worker_list(now=clock.now())
    assert (fast.heartbeat_interval, slow.heartbeat_interval) == (5.0, 60.0)
    intro = Introspector(driver, clock=clock, stale_after=STALE_AFTER)
    clock.advance(45)  # between two of the slow worker's beats; the fast one missed 9 of its own
    wv = await intro.workers()
    assert [(w.id, w.stale, w.heartbeat_interval, w.stale_after) for w in wv.workers] == [
        ("w-fast", True, 5.0, STALE_AFTER),  # 3 beats of 5 s are 15 s: stale_after is the longer
        ("w-slow", False, 60.0, 180.0),
    ]
    clock.advance(180 - 45)  # exactly 3 beats missed: not more
    assert [w.stale for w in (await intro.workers()).workers] == [True, False]
    clock.advance(1)
    assert [w.stale for w in (await intro.workers()).workers] == [True, True]


async def test_a_worker_beating_each_second_is_not_stale_before_stale_after(driver: Driver, clock: FakeClock) -> None:
    await _register(driver, clock, "w-1", 1.0)
    intro = Introspector(driver, clock=clock, stale_after=STALE_AFTER)
    clock.advance(10)  # 10 of its beats missed, but a few seconds' stall is not a death
    assert [w.stale for w in (await intro.workers()).workers] == [False]
    clock.advance(21)
    assert [w.stale for w in (await intro.workers()).workers] == [True]


async def test_a_row_without_its_interval_keeps_the_stale_after_rule(driver: Driver, clock: FakeClock) -> None:
    await _register(driver, clock, "w-old", None)  # as a worker of the previous release registers
    (w,) = await driver.worker_list(now=clock.now())
    assert w.heartbeat_interval is None
    intro = Introspector(driver, clock=clock, stale_after=STALE_AFTER)
    clock.advance(STALE_AFTER)
    assert [(w.stale, w.stale_after) for w in (await intro.workers()).workers] == [(False, STALE_AFTER)]
    clock.advance(1)
    assert [w.stale for w in (await intro.workers()).workers] == [True]


async def test_the_queues_view_and_the_whys_count_a_seldom_beating_worker_live_between_its_beats(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    await _register(driver, clock, "w-slow", 60.0)
    job = await make_job(driver, ids, clock.now())
    intro = Introspector(driver, clock=clock, stale_after=STALE_AFTER)
    clock.advance(100)
    (q,) = (await intro.queues()).queues
    assert (q.workers, q.slots_total) == (1, 2)
    assert [c.kind for c in (await intro.why_job(job.id)).causes] == ["ready"]
    assert not {"stale_worker", "no_worker"} & {c.kind for c in (await intro.why_queue("default")).causes}
    clock.advance(81)  # 181 s: more than 3 of its beats missed
    (q,) = (await intro.queues()).queues
    assert q.workers == 0
    assert [(c.kind, c.worker) for c in (await intro.why_job(job.id)).causes] == [
        ("stale_worker", "w-slow"),
        ("no_worker", None),
    ]
    assert {"stale_worker", "no_worker"} <= {c.kind for c in (await intro.why_queue("default")).causes}
