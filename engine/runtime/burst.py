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
ends, and claims again when its relay published anything since that claim began: a pass of its
own, or one the relay's loop ran (a stage's NOTIFY wakes it) while the claim was under way or after.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import datetime
from typing import Protocol

from engine.runtime import aio
from engine.runtime.floors import ClaimFloors
from engine.runtime.settle import AckBuffer
from engine.types import ClaimBatch

LOCKED_WAIT = 0.01  # seconds before a burst claims again a due row another claim had locked


class Publisher(Protocol):
    """The worker's outbox relay, as a burst asks it (engine/services/relay.py: Relay)."""

    published_total: int  # rows its passes have published, counted as each pass ends

    async def publish_pending(self) -> int: ...


class Burst:
    """Asked after each claim that came back short whether the burst is over; when it is not,
    waits for what could change the answer: the jobs it runs settling, new work (a NOTIFY), or a
    locked row's claim ending."""

    __slots__ = ("running", "acks", "woken", "floors", "relay", "_published")

    def __init__(
        self,
        running: Mapping[str, asyncio.Task[None]],
        acks: AckBuffer,
        woken: asyncio.Event,
        floors: ClaimFloors,
        relay: Publisher | None = None,
    ) -> None:
        self.running, self.acks, self.woken, self.floors = running, acks, woken, floors
        self.relay = relay  # the worker's relay, when it runs one
        # What the relay had published before the claim being judged began: made before the
        # first claim, and again before each claim after (the end of over()).
        self._published = relay.published_total if relay is not None else 0

    async def over(self, claim: ClaimBatch, *, full: bool, now: datetime) -> bool:
        """``claim`` came back short; ``full``: it read every queue from its head at ``now``."""
        if claim.jobs or self.running or not self.acks.settled:
            await aio.first(self.woken.wait(), self._settle())
        elif not full:
            pass  # only a full claim can say nothing is due
        elif claim.next_due is None or claim.next_due > now:
            if self.relay is None:
                return True
            await self.relay.publish_pending()
            if self.relay.published_total == self._published:
                return True  # nothing was published that the claim could have missed
        else:
            await aio.first(self.woken.wait(), asyncio.sleep(LOCKED_WAIT))
        self.floors.full_next()
        if self.relay is not None:
            self._published = self.relay.published_total
        return False

    async def _settle(self) -> None:
        """Until every job running now has ended and every completion's ack has landed."""
        if self.running:
            await asyncio.wait(list(self.running.values()))
        await self.acks.settle()
