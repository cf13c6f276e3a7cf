"""MemoryDriver's fleet limits: concurrency slots and token buckets, with the same meaning as
sql/queries/limits.sql, on the injected clock."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from engine.drivers.memory.state import Bucket, MemoryBase, Slot


class MemoryLimits(MemoryBase):
    async def slot_acquire(
        self, *, key: str, limit: int, job_id: str, worker: str, now: datetime, lease_seconds: float
    ) -> int | None:
        with self.state.lock:
            slots = self.state.slots
            for n in range(limit):
                slots.setdefault((key, n), Slot())
            for n in range(limit):
                held = slots[(key, n)]
                if (
                    held.job_id is None
                    or (held.lease_until is not None and held.lease_until < now)
                    or held.job_id == job_id
                ):
                    slots[(key, n)] = Slot(job_id, worker, now + timedelta(seconds=lease_seconds))
                    return n
            return None

    async def slot_release(self, *, key: str, slot: int, job_id: str) -> None:
        with self.state.lock:
            held = self.state.slots.get((key, slot))
            if held is not None and held.job_id == job_id:
                self.state.slots[(key, slot)] = Slot()

    async def slot_renew_many(
        self, *, worker: str, job_ids: Sequence[str], now: datetime, lease_seconds: float
    ) -> list[str]:
        ids, renewed = set(job_ids), []
        with self.state.lock:
            for held in self.state.slots.values():
                if held.worker == worker and held.job_id in ids:
                    held.lease_until = now + timedelta(seconds=lease_seconds)
                    renewed.append(held.job_id)
        return renewed

    async def rate_take(self, *, key: str, limit: int, per: float, now: datetime) -> float:
        with self.state.lock:
            buckets = self.state.buckets
            if key not in buckets:
                buckets[key] = Bucket(limit - 1.0, now)
                return 0.0
            b = buckets[key]
            avail = min(float(limit), b.tokens + max(0.0, (now - b.refilled_at).total_seconds()) * limit / per)
            taken = avail >= 1
            buckets[key] = Bucket(avail - 1 if taken else avail, max(b.refilled_at, now))
            return 0.0 if taken else (1 - avail) * per / limit
