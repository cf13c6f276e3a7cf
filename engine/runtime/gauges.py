"""The queue gauges a worker exports (depth, oldest waiting, dead letters), read on a timer. The
fleet counts them once per interval, whichever worker asks first; the others read that count
(workers.sql: queue_gauges)."""

from __future__ import annotations

import asyncio

from engine.clock import Clock
from engine.drivers.base import Driver
from engine.runtime.failures import Failures
from engine.runtime.metrics import Metrics


class GaugeReader:
    """Reads the gauges every ``interval`` seconds into ``metrics``."""

    __slots__ = ("driver", "clock", "metrics", "worker", "interval", "_failures")

    def __init__(self, driver: Driver, clock: Clock, metrics: Metrics, *, worker: str, interval: float) -> None:
        self.driver, self.clock, self.metrics = driver, clock, metrics
        self.worker, self.interval = worker, interval
        self._failures = Failures("gauges", worker, metrics, every=False)  # stale gauges: still ready

    async def run(self) -> None:
        while True:
            await self.refresh()
            await self.clock.sleep(self.interval)

    async def refresh(self) -> None:
        """One reading. A failed one leaves the gauges as they were, and is counted and logged once
        a streak (engine/runtime/failures.py; the next tick tries again)."""
        try:
            gauges = await self.driver.queue_gauges(now=self.clock.now(), max_age=self.interval)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._failures.failed(exc)
            return
        self.metrics.set_gauges(gauges)
        self._failures.landed()
