"""A worker's jobs are re-delivered only once it has been seen gone for the grace
(engine/runtime/presence.py GRACE intervals): a worker whose presence session the server ended
takes it again at its own next look, and keeps its jobs. Real intervals are replaced by a fake
monotonic clock; the driver is the memory one, whose presence ends only by release."""

from __future__ import annotations

from engine.clock import FakeClock
from engine.drivers.memory import MemoryDriver
from engine.ids import IdFactory
from engine.runtime.metrics import Metrics
from engine.runtime.presence import GRACE, Presence
from engine.types import NewJob, WorkerRegistration

INTERVAL = 0.5


class Ticks:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


async def _running_job(d: MemoryDriver, ids: IdFactory, clock: FakeClock, worker: str) -> str:
    await d.worker_register(
        worker=WorkerRegistration(id=worker, host="h", pid=1, queues=("q",), concurrency=1), now=clock.now()
    )
    await d.worker_presence_hold(id=worker)
    jid = ids.new()
    await d.job_enqueue(jobs=[NewJob(jid, "n", "q", jid, {}, 3)], now=clock.now())
    await d.worker_claim(queues=["q"], limit=1, worker=worker, now=clock.now(), lease_seconds=30)
    return jid


async def test_a_worker_gone_for_less_than_the_grace_keeps_its_jobs_and_one_gone_longer_loses_them() -> None:
    clock, ticks, d = FakeClock(), Ticks(), MemoryDriver()
    ids = IdFactory(clock, seed=1)
    await d.open()
    back = await _running_job(d, ids, clock, "w-back")
    dead = await _running_job(d, ids, clock, "w-dead")
    p = Presence(d, clock, worker="w-rescuer", interval=INTERVAL, metrics=Metrics(), monotonic=ticks)
    await d.worker_presence_release(id="w-back")  # its session ended...
    await d.worker_presence_release(id="w-dead")
    assert await p.rescue_once() == []  # first seen gone: not yet
    ticks.t += INTERVAL
    await d.worker_presence_hold(id="w-back")  # ...and it took its presence again at its next look
    assert await p.rescue_once() == []
    ticks.t += (GRACE - 1) * INTERVAL
    orphans = await p.rescue_once()
    assert [o.job_id for o in orphans] == [dead]  # gone for the grace: re-delivered
    assert (await d.job_get(job_id=back)).claimed_by == "w-back"  # kept its job throughout
    await d.worker_presence_release(id="w-back")  # gone again: the grace starts over
    ticks.t += INTERVAL
    assert await p.rescue_once() == []
    ticks.t += GRACE * INTERVAL
    assert [o.job_id for o in await p.rescue_once()] == [back]
    await d.close()
