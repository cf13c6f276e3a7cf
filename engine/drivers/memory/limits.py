"""MemoryDriver's fleet limits: concurrency slots and token buckets, with the same meaning as
sql/queries/limits.sql, on the injected clock."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from engine.drivers.memory.state import MemoryState


class MemoryLimits:
    state: MemoryState

    def _slots(self) -> dict[tuple[str, int], list]:  # type: ignore[type-arg]
        # (key, slot) -> [job_id, worker, lease_until], as the jobs.slot table.
        return self.state.extra.setdefault("slots", {})  # type: ignore[no-any-return]

    async def slot_acquire(
        self, *, key: str, limit: int, job_id: str, worker: str, now: datetime, lease_seconds: float
    ) -> int | None:
        with self.state.lock:
            slots = self._slots()
            for n in range(limit):
                slots.setdefault((key, n), [None, None, None])
            for n in range(limit):
                held = slots[(key, n)]
                if held[0] is None or held[2] < now or held[0] == job_id:
                    slots[(key, n)] = [job_id, worker, now + timedelta(seconds=lease_seconds)]
                    return n
            return None

    async def slot_release(self, *, key: str, slot: int, job_id: str) -> None:
        with self.state.lock:
            held = self._slots().get((key, slot))
            if held is not None and held[0] == job_id:
                self._slots()[(key, slot)] = [None, None, None]

    async def slot_renew_many(
        self, *, worker: str, job_ids: Sequence[str], now: datetime, lease_seconds: float
    ) -> None:
        ids = set(job_ids)
        with self.state.lock:
            for held in self._slots().values():
                if held[1] == worker and held[0] in ids:
                    held[2] = now + timedelta(seconds=lease_seconds)

    async def rate_take(self, *, key: str, limit: int, per: float, now: datetime) -> float:
        with self.state.lock:
            buckets: dict[str, tuple[float, datetime]] = self.state.extra.setdefault("rate_buckets", {})
            if key not in buckets:
                buckets[key] = (limit - 1.0, now)
                return 0.0
            tokens, at = buckets[key]
            avail = min(float(limit), tokens + max(0.0, (now - at).total_seconds()) * limit / per)
            taken = avail >= 1
            buckets[key] = (avail - 1 if taken else avail, max(at, now))
            return 0.0 if taken else (1 - avail) * per / limit
