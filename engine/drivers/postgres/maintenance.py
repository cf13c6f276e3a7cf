"""PostgresDriver's maintenance: leader lease, rescuer, pruner, throughput rollup and worker
reaper (sql/queries/maintenance.sql), every mutation fenced on the leader's term."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from engine.drivers.postgres.base import PRESENCE_NAMESPACE, PostgresBase
from engine.drivers.sqlfiles import Q
from engine.types import JobState, Orphan


class PostgresMaintenance(PostgresBase):
    async def leader_acquire(self, *, name: str, holder: str, now: datetime, lease_seconds: float) -> int | None:
        row = await self._row(
            Q.leader_acquire, {"name": name, "holder": holder, "now": now, "lease_seconds": lease_seconds}
        )
        return None if row is None else int(row["term"])

    async def leader_release(self, *, name: str, holder: str, term: int, now: datetime) -> None:
        await self._exec(Q.leader_release, {"name": name, "holder": holder, "term": term, "now": now})

    async def job_rescue(
        self, *, leader: str, holder: str, term: int, now: datetime, limit: int
    ) -> list[tuple[str, JobState]]:
        rows = await self._rows(
            Q.job_rescue, {"leader": leader, "holder": holder, "term": term, "now": now, "limit": limit}
        )
        return [(str(r["id"]), JobState(r["state"])) for r in rows]

    async def job_prune(
        self, *, leader: str, holder: str, term: int, now: datetime, before: datetime, dead_before: datetime, limit: int
    ) -> list[str]:
        rows = await self._rows(
            Q.job_prune,
            {
                "leader": leader,
                "holder": holder,
                "term": term,
                "now": now,
                "before": before,
                "dead_before": dead_before,
                "limit": limit,
            },
        )
        return [str(r["id"]) for r in rows]

    async def throughput_rollup(self, *, leader: str, holder: str, term: int, now: datetime, settle: float) -> int:
        row = await self._row(
            Q.throughput_rollup, {"leader": leader, "holder": holder, "term": term, "now": now, "settle": settle}
        )
        return int(row["rows"]) if row else 0

    async def worker_gone(self) -> list[str]:
        return [r["id"] for r in await self._rows(Q.worker_gone, {"namespace": PRESENCE_NAMESPACE})]

    async def job_rescue_orphaned(self, *, workers: Sequence[str], now: datetime, limit: int) -> list[Orphan]:
        params = {"namespace": PRESENCE_NAMESPACE, "workers": list(workers), "now": now, "limit": limit}
        rows = await self._rows(Q.job_rescue_orphaned, params)
        return [Orphan(str(r["id"]), JobState(r["state"]), r["queue"], r["claimed_by"]) for r in rows]

    async def worker_reap(self, *, before: datetime) -> list[str]:
        return [str(r["id"]) for r in await self._rows(Q.worker_reap, {"before": before})]
