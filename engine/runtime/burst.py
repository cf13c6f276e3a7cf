"""A burst: a worker that stops by itself once nothing is left for it (``burst=True``; `jobs
worker --burst`; engine.testing.run_due), as RQ's burst mode and Oban's drain_queue do.

"Nothing left" is the claim's own notion of due, never a second rule: a full claim (every
queue read from its head, no floor: engine/runtime/floors.py) took no row, and said the next
row of its queues falls due later than now, or that there is none; every job this worker
claimed has settled, its ack landed. A job a run enqueued is committed before that run ends, so
the claim after it sees it; a retry waits out its backoff as a delayed row (later than now),
so a burst does not wait for it, nor for a suspended sleep, an event wait or a paused queue. A
row due now that the claim did not take was locked by another worker's claim: the burst looks
again LOCKED_WAIT later. A worker that runs an outbox relay publishes what is staged before it
ends (its relay's pass in flight included), and claims again when that published anything.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime

from engine.runtime import aio
from engine.runtime.floors import ClaimFloors
from engine.runtime.settle import AckBuffer
from engine.types import ClaimBatch

LOCKED_WAIT = 0.01  # seconds before a burst claims again a due row another claim had locked


class Burst:
    """Asked after each claim that came back short whether the burst is over; when it is not,
    waits for what could change the answer: the jobs it runs settling, new work (a NOTIFY), or a
    locked row's claim ending."""

    __slots__ = ("running", "acks", "woken", "floors", "publish")

    def __init__(
        self,
        running: Mapping[str, asyncio.Task[None]],
        acks: AckBuffer,
        woken: asyncio.Event,
        floors: ClaimFloors,
        publish: Callable[[], Awaitable[int]] | None = None,
    ) -> None:
        self.running, self.acks, self.woken, self.floors = running, acks, woken, floors
        self.publish = publish  # the worker's relay's Relay.publish_pending, when it runs one

    async def over(self, claim: ClaimBatch, *, full: bool, now: datetime) -> bool:
        """``claim`` came back short; ``full``: it read every queue from its head at ``now``."""
        if claim.jobs or self.running or not self.acks.settled:
            await aio.first(self.woken.wait(), self._settle())
        elif not full:
            pass  # only a full claim can say nothing is due
        elif claim.next_due is None or claim.next_due > now:
            if self.publish is None or not await self.publish():
                return True
        else:
            await aio.first(self.woken.wait(), asyncio.sleep(LOCKED_WAIT))
        self.floors.full_next()
        return False

    async def _settle(self) -> None:
        """Until every job running now has ended and every completion's ack has landed."""
        if self.running:
            await asyncio.wait(list(self.running.values()))
        await self.acks.settle()
