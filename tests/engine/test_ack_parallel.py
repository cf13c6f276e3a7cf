"""The ack buffer's ``ack_parallel`` (engine/runtime/settle.py): up to that many ack statements in
flight at once, each on its own connection; one at a time when it is 1 (the default)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from engine.api import Engine
from engine.clock import FakeClock
from engine.drivers.memory import MemoryDriver
from engine.ids import IdFactory
from engine.types import Ack
from tests.engine.test_worker import fast, running


class HeldAcks(MemoryDriver):
    """A memory driver whose ack statements wait until released, counting how many are in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.in_flight = self.most = 0
        self.release = asyncio.Event()

    async def job_ack_many(self, *, acks: Sequence[Ack], now: Any) -> list[str]:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            await self.release.wait()
            return await super().job_ack_many(acks=acks, now=now)
        finally:
            self.in_flight -= 1


@pytest.mark.parametrize("parallel", [1, 3])
async def test_ack_parallel_bounds_the_ack_statements_in_flight(clock: FakeClock, parallel: int) -> None:
    mem = HeldAcks()
    eng = Engine(mem, clock=clock, ids=IdFactory(clock, seed=11))
    async with running(mem, clock, fast, ack_batch=1, ack_parallel=parallel, concurrency=6) as (w, seen):
        for n in range(5):
            await eng.aenqueue(fast, {"n": n})
        for _ in range(200):  # until the buffer holds what the slots cannot send yet
            if mem.in_flight == parallel and len(w.acks) == 5 - parallel:
                break
            await asyncio.sleep(0.005)
        assert (mem.in_flight, len(w.acks)) == (parallel, 5 - parallel)
        mem.release.set()
        done = [await asyncio.wait_for(seen.get(), 10) for _ in range(5)]
    assert mem.most == parallel and {ex.outcome for ex in done} == {"completed"}
