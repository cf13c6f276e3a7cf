"""A worker's presence, and the fleet's recovery from a worker that died.

Each worker holds a presence for as long as it runs (engine/drivers/base.py: on PostgreSQL a
session-level advisory lock on a connection of its own, which the server frees the moment the
process's session ends, SIGKILL included). Every worker, every ``presence_interval`` real seconds,
checks its own presence still answers (taking it again if the server ended its session) and
re-delivers the running jobs of workers whose presence is gone (`job_rescue_orphaned`), waking the
fleet so another worker claims them at once: recovery within about three intervals of a kill, not
a whole lease. A worker is re-delivered for only once it has been seen gone for ``GRACE``
intervals: a worker whose presence session the server ended (a backend kill) takes it again at its
own next look, and its jobs must not be taken from it meanwhile. A worker alive but stalled keeps its presence, and its jobs wait for their lease, as
before (the maintenance leader's rescuer). Fencing is unchanged (I15): a re-delivered job's next
claim bumps its run, and the gone worker's late ack or nack is refused.

The memory driver's workers cannot die apart from the process that holds it: there a presence
ends only when released (a drain that ended still holding claims), and its jobs are re-delivered
the same way.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from engine.clock import Clock
from engine.drivers.base import Driver
from engine.runtime import logs
from engine.runtime.failures import Failures
from engine.runtime.metrics import Metrics
from engine.types import JobState, Orphan

RESCUE_BATCH = 500
GRACE = 2  # intervals a worker must have been seen gone before its jobs are re-delivered


class Presence:
    def __init__(
        self,
        driver: Driver,
        clock: Clock,
        *,
        worker: str,
        interval: float,
        metrics: Metrics,
        poke: Callable[[], None] = lambda: None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.driver, self.clock, self.worker, self.interval = driver, clock, worker, interval
        self.metrics, self.poke, self.monotonic = metrics, poke, monotonic
        self._seen_gone: dict[str, float] = {}  # worker -> when this worker first saw it gone
        # Asked for by hold() and given up by release(): the loop's looks hold it again only while
        # it is asked for. A worker whose row was reaped releases it, registers again and holds it
        # anew (engine/runtime/worker.py, the heartbeat); a look in between would take a lock noted
        # on no row, and the hold after the registration, finding it held, would note none on the
        # new row, which no worker would then ever judge gone. One hold or release at a time.
        self._wanted = False
        self._turn = asyncio.Lock()

    async def hold(self) -> None:
        async with self._turn:
            self._wanted = True
            await self.driver.worker_presence_hold(id=self.worker)

    async def release(self) -> None:
        async with self._turn:
            self._wanted = False
            try:
                await self.driver.worker_presence_release(id=self.worker)
            except Exception:  # its session goes with the process anyway
                pass

    async def _look(self) -> None:
        """The loop's look at its own presence: held again if the server ended its session, and
        left alone while released."""
        async with self._turn:
            if self._wanted:
                await self.driver.worker_presence_hold(id=self.worker)

    async def rescue_once(self) -> list[Orphan]:
        """Re-deliver the running jobs of workers gone for the grace, and wake the fleet for them."""
        at = self.monotonic()
        gone = await self.driver.worker_gone()
        self._seen_gone = {w: self._seen_gone.get(w, at) for w in gone}
        due = [w for w, since in self._seen_gone.items() if at - since >= GRACE * self.interval]
        if not due:
            return []
        orphans = await self.driver.job_rescue_orphaned(workers=due, now=self.clock.now(), limit=RESCUE_BATCH)
        if not orphans:
            return orphans
        logs.emit(
            logs.WORKER_GONE,
            logging.WARNING,
            workers=sorted({o.worker for o in orphans}),
            count=len(orphans),
            job_ids=[o.job_id for o in orphans][:20],
            by=self.worker,
        )
        for o in orphans:
            self.metrics.orphaned.labels(o.queue).inc()
        if any(o.state is JobState.READY for o in orphans):
            self.poke()  # this worker claims at once; the statement's NOTIFY wakes the fleet's
        return orphans

    async def run(self) -> None:
        # Logged once a streak (the claim loop reports the database's state too); the worker stays
        # ready meanwhile: every other worker's look rescues the fleet's orphans.
        failures = Failures("presence", self.worker, self.metrics, every=False)
        while True:
            try:
                await self._look()
                await self.rescue_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                failures.failed(exc)
            else:
                failures.landed()
            # Real time: it watches the fleet's sessions, not a deadline of the domain.
            await asyncio.sleep(self.interval)
