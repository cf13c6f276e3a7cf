"""Per-job limits, enforced fleet-wide before a handler starts: `concurrency` through durable
slots (jobs.slot, so two worker processes share one limit) and `rate_limit` through token buckets
(jobs.rate_bucket), global or per key. A job over a limit is SHED: parked, no attempt burned, no
last error (I8); the worker's one `shed()` path settles it.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.clock import Clock
from engine.drivers.base import Driver
from engine.jobs import JobDefinition
from engine.runtime.leases import Lease
from engine.types import JobRow


@dataclass(frozen=True)
class Shed:
    limit: str  # "concurrency" | "rate"
    key: str
    wait: float  # seconds until the limit may admit it


def concurrency_key(d: JobDefinition) -> str:
    return f"concurrency:{d.name}"


def rate_key(d: JobDefinition, row: JobRow) -> str:
    assert d.rate_limit is not None
    if d.rate_limit.key is None:
        return f"rate:{d.name}"
    return f"rate:{d.name}:{d.rate_limit.key(row.input, row.tenant)}"


class Limits:
    def __init__(self, driver: Driver, clock: Clock, *, worker: str, lease_seconds: float, shed_delay: float) -> None:
        self.driver, self.clock, self.worker = driver, clock, worker
        self.lease_seconds, self.shed_delay = lease_seconds, shed_delay

    async def admit(self, d: JobDefinition, row: JobRow, lease: Lease) -> Shed | None:
        """None: admitted (a concurrency slot, if any, is recorded on the lease). Else the shed."""
        if d.concurrency is not None:
            key = concurrency_key(d)
            slot = await self.driver.slot_acquire(
                key=key,
                limit=d.concurrency,
                job_id=row.id,
                worker=self.worker,
                now=self.clock.now(),
                lease_seconds=self.lease_seconds,
            )
            if slot is None:
                return Shed("concurrency", key, self.shed_delay)
            lease.slot_key, lease.slot = key, slot
        if d.rate_limit is not None:
            key = rate_key(d, row)
            wait = await self.driver.rate_take(
                key=key, limit=d.rate_limit.limit, per=d.rate_limit.per, now=self.clock.now()
            )
            if wait > 0:
                await self.release(lease)  # the slot taken above is not used
                return Shed("rate", key, wait)
        return None

    async def release(self, lease: Lease) -> None:
        if lease.slot_key is not None and lease.slot is not None:
            key, slot = lease.slot_key, lease.slot
            lease.slot_key = lease.slot = None
            await self.driver.slot_release(key=key, slot=slot, job_id=lease.claim.job_id)
