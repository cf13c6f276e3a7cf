"""A worker's row in jobs.worker: its registration, its heartbeats, and its registering again when
the reaper removed the row of a worker still alive (a long stall, a database away past the reap
window).

What the worker knows of itself outlives its row: the row it registers again carries its start
time, its heartbeat interval, whether it drains, and the operator's drain request it had seen. A
worker that saw a request keeps draining (the drain runs in its own process, whatever its row
says), and its new row says so: the Workers screen shows it draining, asked by whom and when, and
asking again finds the first request standing. A request recorded on a row reaped before a
heartbeat answered it was never seen: it is gone with the row.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable, Sequence
from datetime import datetime

from engine.clock import Clock
from engine.drivers.base import Driver
from engine.runtime.failures import Failures
from engine.runtime.health import Health
from engine.runtime.metrics import Metrics
from engine.runtime.presence import Presence
from engine.types import Heartbeat, WorkerRegistration


class Registration:
    def __init__(
        self,
        driver: Driver,
        clock: Clock,
        *,
        worker: str,
        queues: Sequence[str],
        concurrency: int,
        heartbeat_interval: float,
        presence: Presence,
        health: Health,
        metrics: Metrics,
    ) -> None:
        self.driver, self.clock, self.worker = driver, clock, worker
        self.queues, self.concurrency, self.heartbeat_interval = queues, concurrency, heartbeat_interval
        self.presence, self.health, self.metrics = presence, health, metrics
        self.started_at: datetime | None = None  # when its first registration landed
        self.drain_seen: Heartbeat | None = None  # the operator's drain request a heartbeat answered

    async def register(self, *, stopping: bool = False) -> None:
        """Open the driver and register (again: with the start time and the drain it already had)."""
        await self.driver.open()
        now = self.clock.now()
        registration = WorkerRegistration(
            self.worker,
            socket.gethostname(),
            os.getpid(),
            tuple(self.queues),
            self.concurrency,
            started_at=self.started_at or now,
            heartbeat_interval=self.heartbeat_interval,
            stopping=stopping,
            drain=self.drain_seen,
        )
        await self.driver.worker_register(worker=registration, now=now)
        if self.started_at is None:
            self.started_at = now
        await self.presence.hold()  # before the first claim: no claim of ours is ever an orphan's

    async def beat(self, *, in_use: int, stopping: bool) -> None:
        """One heartbeat whose failure is no matter (the next heartbeat, or the reaper, has the last word)."""
        try:
            await self.driver.worker_heartbeat(id=self.worker, in_use=in_use, stopping=stopping, now=self.clock.now())
        except Exception:
            pass

    async def run(
        self, *, in_use: Callable[[], int], stopping: Callable[[], bool], drain: Callable[[Heartbeat], None]
    ) -> None:
        """The heartbeat loop: every heartbeat interval, stamp the row; ``drain`` is called with
        the operator's drain request each time a heartbeat answers one; a row gone is
        registered again. A heartbeat that fails is said as what it is (engine/runtime/failures.py);
        one refused for another reason than a lost connection makes the worker not ready."""
        failures = Failures("heartbeat", self.worker, self.metrics, self.health)
        while True:
            await self.clock.sleep(self.heartbeat_interval)
            busy = in_use()
            self.metrics.in_use.set(busy)
            try:
                beat = await self.driver.worker_heartbeat(
                    id=self.worker, in_use=busy, stopping=stopping(), now=self.clock.now()
                )
                self.health.beat()
                failures.landed()
                if beat is not None and beat.drain_requested:
                    if self.drain_seen is None:
                        self.drain_seen = beat
                    drain(beat)
                if beat is None:  # reaped while the database was away: register again
                    await self.presence.release()  # taken again and noted on the new row
                    await self.register(stopping=stopping())
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.health.beat_failed(exc)
                failures.failed(exc)
