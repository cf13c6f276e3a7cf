"""PostgresDriver's fleet limits: concurrency slots and token buckets, shared by every worker
process through jobs.slot and jobs.rate_bucket (sql/queries/limits.sql)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from engine.drivers.postgres.base import PostgresBase
from engine.drivers.sqlfiles import Q


class PostgresLimits(PostgresBase):
    async def slot_acquire(
        self, *, key: str, limit: int, job_id: str, worker: str, now: datetime, lease_seconds: float
    ) -> int | None:
        params: dict[str, Any] = {
            "key": key,
            "limit": limit,
            "job_id": job_id,
            "worker": worker,
            "now": now,
            "lease_seconds": lease_seconds,
        }
        async with self._connection() as conn:
            await self._exec(Q.slot_seed, params, conn=conn)
            row = await self._row(Q.slot_acquire, params, conn=conn)
        return None if row is None else int(row["slot"])

    async def slot_release(self, *, key: str, slot: int, job_id: str) -> None:
        await self._exec(Q.slot_release, {"key": key, "slot": slot, "job_id": job_id})

    async def slot_renew_many(
        self, *, worker: str, job_ids: Sequence[str], now: datetime, lease_seconds: float
    ) -> list[str]:
        if not job_ids:
            return []
        rows = await self._rows(
            Q.slot_renew_many,
            {"worker": worker, "job_ids": list(job_ids), "now": now, "lease_seconds": lease_seconds},
        )
        return [str(r["job_id"]) for r in rows]

    async def rate_take(self, *, key: str, limit: int, per: float, now: datetime) -> float:
        rows = await self._rows(Q.rate_take, {"key": key, "limit": limit, "per": per, "now": now})
        if not rows:  # a first take raced another for a new key: try again at once
            return 0.001
        r = rows[0]
        return 0.0 if r["taken"] else max(0.001, float(r["wait"]))
