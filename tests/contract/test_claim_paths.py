"""The claim takes each queue's best rows from its own index scan and merges them: across
several queues the batch is still the global top rows by (priority desc, run_at, id), and a
paused queue gives none."""

from __future__ import annotations

from datetime import timedelta

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.testing import make_job


async def test_a_claim_over_several_queues_is_the_global_top_by_priority(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    now = clock.now()
    low_a = await make_job(driver, ids, now - timedelta(seconds=9), queue="a", priority=0)
    high_b = await make_job(driver, ids, now - timedelta(seconds=1), queue="b", priority=5)
    mid_a = await make_job(driver, ids, now - timedelta(seconds=2), queue="a", priority=3)
    old_b = await make_job(driver, ids, now - timedelta(seconds=8), queue="b", priority=0)
    await make_job(driver, ids, now, queue="c", priority=9)  # a queue not asked for
    got = (await driver.worker_claim(queues=["a", "b"], limit=3, worker="w", now=now, lease_seconds=30)).jobs
    assert [c.row.id for c in got] == [high_b.id, mid_a.id, low_a.id]
    rest = (await driver.worker_claim(queues=["a", "b"], limit=3, worker="w", now=now, lease_seconds=30)).jobs
    assert [c.row.id for c in rest] == [old_b.id]


async def test_a_paused_queue_gives_no_rows_to_a_multi_queue_claim(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    now = clock.now()
    a = await make_job(driver, ids, now, queue="a")
    await make_job(driver, ids, now, queue="held", priority=9)
    await driver.queue_pause(queue="held", paused=True, actor="alice", note="deploy", now=now)  # type: ignore[attr-defined]
    got = (await driver.worker_claim(queues=["held", "a"], limit=10, worker="w", now=now, lease_seconds=30)).jobs
    assert [c.row.id for c in got] == [a.id]


async def test_a_claim_after_a_floor_reads_that_queue_from_it_and_its_next_due_too(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    # The worker's floor (engine/runtime/floors.py): rows of that queue due before it are left to
    # a full claim, another queue is read from its head.
    now = clock.now()
    before = await make_job(driver, ids, now - timedelta(seconds=9), queue="a")
    at = await make_job(driver, ids, now - timedelta(seconds=5), queue="a")
    later = await make_job(driver, ids, now - timedelta(seconds=1), queue="a")
    other = await make_job(driver, ids, now - timedelta(seconds=9), queue="b")
    floor = {"a": now - timedelta(seconds=5)}
    batch = await driver.worker_claim(queues=["a", "b"], limit=10, worker="w", now=now, lease_seconds=30, after=floor)
    assert [c.row.id for c in batch.jobs] == [other.id, at.id, later.id]
    assert batch.next_due is None  # the row left behind is below the floor: nothing due from it
    full = await driver.worker_claim(queues=["a", "b"], limit=10, worker="w", now=now, lease_seconds=30)
    assert [c.row.id for c in full.jobs] == [before.id]
