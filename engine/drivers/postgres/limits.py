"""PostgresDriver's fleet limits: concurrency slots and token buckets, shared by every worker
process through jobs.slot and jobs.rate_bucket (sql/queries/limits.sql)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from engine.drivers.postgres.pool import LoopPools
from engine.drivers.sqlfiles import Q


class PostgresLimits:
    pools: LoopPools

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
        async with self.pools.connection() as conn:
            await conn.execute(Q.slot_seed.text, params)  # type: ignore[arg-type]
            cur = await conn.execute(Q.slot_acquire.text, params)  # type: ignore[arg-type]
            row = await cur.fetchone()
        return None if row is None else int(row["slot"])  # type: ignore[call-overload]

    async def slot_release(self, *, key: str, slot: int, job_id: str) -> None:
        async with self.pools.connection() as conn:
            await conn.execute(Q.slot_release.text, {"key": key, "slot": slot, "job_id": job_id})

    async def slot_renew_many(
        self, *, worker: str, job_ids: Sequence[str], now: datetime, lease_seconds: float
    ) -> None:
        if not job_ids:
            return
        async with self.pools.connection() as conn:
            await conn.execute(
                Q.slot_renew_many.text,
                {
                    "worker": worker,
                    "job_ids": list(job_ids),
                    "now": now,
                    "lease_seconds": lease_seconds,
                },
            )

    async def rate_take(self, *, key: str, limit: int, per: float, now: datetime) -> float:
        async with self.pools.connection() as conn:
            cur = await conn.execute(Q.rate_take.text, {"key": key, "limit": limit, "per": per, "now": now})
            rows = await cur.fetchall()
        if not rows:  # a first take raced another for a new key: try again at once
            return 0.001
        r: Any = rows[0]
        return 0.0 if r["taken"] else max(0.001, float(r["wait"]))
