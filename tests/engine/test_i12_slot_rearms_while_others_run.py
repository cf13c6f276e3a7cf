"""I12 when the pool is full: a slot freed while another job still runs wakes the claim loop at
once. With every slot held the loop waits for a slot; the job that settles first must re-arm its
own slot even though the slow one keeps the other, so a third job runs before the slow one ends."""

from __future__ import annotations

import asyncio
from typing import Any

from engine.api import Engine
from engine.clock import FakeClock
from engine.drivers.memory import MemoryDriver
from engine.ids import IdFactory
from engine.jobs import Registry, job
from engine.runtime.execute import Execution
from engine.runtime.worker import Worker, WorkerConfig

Q = "i12q"
GATES: dict[str, asyncio.Event] = {}


def gate(name: str) -> asyncio.Event:
    return GATES.setdefault(name, asyncio.Event())


@job(name="i12.held", queue=Q, idempotency_key=lambda inp: str(inp["n"]))
async def held(ctx, inp):  # type: ignore[no-untyped-def]
    gate(f"started-{inp['n']}").set()
    await gate(f"release-{inp['n']}").wait()
    return inp["n"]


async def soon(event: asyncio.Event) -> None:
    await asyncio.wait_for(event.wait(), timeout=10)  # a safety net, never the expected path


async def test_i12_a_slot_freed_while_another_job_runs_is_claimed_into_at_once(clock: FakeClock) -> None:
    GATES.clear()
    mem = MemoryDriver()
    eng = Engine(mem, clock=clock, ids=IdFactory(clock, seed=12))
    seen: asyncio.Queue[Execution] = asyncio.Queue()
    config: dict[str, Any] = dict(
        queues=(Q,), concurrency=2, lease_seconds=30, poll_interval=60.0, flush_interval=0.001
    )
    w = Worker(mem, Registry([held]), config=WorkerConfig(**config), clock=clock, on_execution=seen.put_nowait)
    async with w:
        try:
            await eng.aenqueue(held, {"n": 0})  # the slow one: holds its slot to the end
            await soon(gate("started-0"))
            await eng.aenqueue(held, {"n": 1})
            await soon(gate("started-1"))
            third = await eng.aenqueue(held, {"n": 2})  # both slots are held: it waits in the queue
            assert w.in_use == 2
            gate("release-1").set()  # job 1 settles; job 0 still runs
            await soon(gate("started-2"))  # its slot re-armed and took job 2
            assert (await eng.aget(third.id)).state.value == "running"
            assert w.in_use == 2 and not gate("release-0").is_set()
        finally:  # every job may end, so the drain never waits on a failed run's held one
            for n in range(3):
                gate(f"release-{n}").set()
        done = [await asyncio.wait_for(seen.get(), timeout=10) for _ in range(3)]
    assert sorted(e.outcome for e in done) == ["completed"] * 3
