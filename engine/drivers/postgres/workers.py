"""PostgresDriver's worker area: registration rows, LISTEN/NOTIFY wake-ups, next due time and
queue gauges; each method runs named statements from sql/queries/workers.sql."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import psycopg

from engine.drivers.postgres.base import PRESENCE_NAMESPACE, PostgresBase
from engine.drivers.postgres.rows import CLAIM_FIELDS, claimed_jobs
from engine.drivers.sqlfiles import Q
from engine.drivers.transient import connection_lost
from engine.errors import X_INVARIANT, JobsError
from engine.types import ClaimBatch, Heartbeat, QueueGauges, WorkerRegistration, gauges_at

if TYPE_CHECKING:  # engine.records is imported where one is built: a worker never loads it
    from engine.records import WorkerRecord

_RUN_AT = CLAIM_FIELDS.index("run_at")
PRESENCE_KEY_TRIES = 8
_KEYS = random.SystemRandom()  # the OS's randomness: two workers never share a seed


class PostgresWorkers(PostgresBase):
    # Each event loop's LISTEN connection, outside the pools (PostgresDriver sets it to {}).
    _listen_conns: dict[asyncio.AbstractEventLoop, psycopg.AsyncConnection[Any]]
    # Each worker's presence session, by worker id, outside the pools (PostgresDriver sets it to {}).
    _presence: dict[str, psycopg.AsyncConnection[Any]]

    async def worker_register(self, *, worker: WorkerRegistration, now: datetime) -> None:
        w, drain = worker, worker.drain or Heartbeat()
        await self._exec(
            Q.worker_register,
            {
                "id": w.id,
                "host": w.host,
                "pid": w.pid,
                "queues": list(w.queues),
                "concurrency": w.concurrency,
                "now": now,
                "started_at": w.started_at or now,
                "heartbeat_interval": w.heartbeat_interval,
                "stopping": w.stopping,
                "drain_requested_by": drain.drain_requested_by,
                "drain_requested_at": drain.drain_requested_at,
            },
        )

    async def worker_presence_hold(self, *, id: str) -> None:
        conn = self._presence.get(id)
        with connection_lost():
            if conn is not None:
                try:
                    await self._row(Q.worker_presence_check, {}, conn=conn)
                    return
                except psycopg.Error:  # its session ended (the server's doing): take the lock again
                    self._presence.pop(id, None)
                    await conn.close()
            conn = await self.pools.connect_own()
            try:
                key = await self._presence_lock(conn)
                await self._exec(Q.worker_presence_record, {"id": id, "key": key}, conn=conn)
            except BaseException:
                await conn.close()
                raise
            self._presence[id] = conn

    async def _presence_lock(self, conn: psycopg.AsyncConnection[Any]) -> int:
        """A presence lock on ``conn`` under a random key (another session holding one: the next)."""
        for _ in range(PRESENCE_KEY_TRIES):
            key = _KEYS.randrange(1, 2**31)  # positive: pg_locks shows it as an oid
            row = await self._row(Q.worker_presence_lock, {"namespace": PRESENCE_NAMESPACE, "key": key}, conn=conn)
            if row is not None and row["held"]:
                return key
        raise JobsError(
            X_INVARIANT,
            cause=f"{PRESENCE_KEY_TRIES} random presence keys were all held by other sessions",
            fix='psql "$JOBS_DSN" -c "select count(*) from pg_locks where locktype = \'advisory\'"',
        )

    async def worker_presence_release(self, *, id: str) -> None:
        conn = self._presence.pop(id, None)
        if conn is not None:
            try:
                await self._exec(Q.worker_presence_unlock, {}, conn=conn)
            except psycopg.Error:  # its session is gone already, and its lock with it
                pass
            await conn.close()

    async def _presence_close(self) -> None:
        while self._presence:
            await self._presence.popitem()[1].close()  # a connection's close awaits nothing: any loop's

    async def worker_heartbeat(self, *, id: str, in_use: int, stopping: bool, now: datetime) -> Heartbeat | None:
        row = await self._row(Q.worker_heartbeat, {"id": id, "in_use": in_use, "stopping": stopping, "now": now})
        return None if row is None else Heartbeat(row["drain_requested_by"], row["drain_requested_at"])

    async def worker_deregister(self, *, id: str) -> None:
        await self._exec(Q.worker_deregister, {"id": id})

    async def worker_list(self, *, now: datetime) -> list[WorkerRecord]:
        from engine.records import WorkerRecord

        rows = await self._rows(Q.worker_list, {"now": now})
        return [
            WorkerRecord(
                r["id"],
                r["host"],
                r["pid"],
                tuple(r["queues"]),
                r["concurrency"],
                r["in_use"],
                r["started_at"],
                r["heartbeat_at"],
                r["stopping"],
                float(r["heartbeat_age"]),
                r["drain_requested_by"],
                r["drain_requested_at"],
                r["heartbeat_interval"],
            )
            for r in rows
        ]

    async def worker_claim(
        self,
        *,
        queues: Sequence[str],
        limit: int,
        worker: str,
        now: datetime,
        lease_seconds: float,
        after: Mapping[str, datetime] | None = None,
    ) -> ClaimBatch:
        rows = await self._raw(
            Q.worker_claim,
            {
                "queues": list(queues),
                "floors": [after.get(q) for q in queues] if after else [None] * len(queues),
                "limit": limit,
                "worker": worker,
                "now": now,
                "lease_seconds": lease_seconds,
            },
        )
        # One row, its id null, is when the queues next have work (workers.sql): the last one, as
        # the union's arms run in order, but looked for from the end rather than assumed.
        next_due = None
        for at in range(len(rows) - 1, -1, -1):
            if rows[at][0] is None:
                next_due = rows.pop(at)[_RUN_AT]
                break
        lease_until = now + timedelta(seconds=lease_seconds)
        return ClaimBatch(claimed_jobs(rows, worker=worker, now=now, lease_until=lease_until), next_due)

    # --- LISTEN/NOTIFY: one dedicated connection per event loop, outside the pool -------------

    async def _listen_conn(self) -> tuple[psycopg.AsyncConnection[Any], bool]:
        """This loop's LISTEN connection, and whether it was subscribed just now."""
        loop = asyncio.get_running_loop()
        conn = self._listen_conns.get(loop)
        if conn is not None and not conn.closed:
            return conn, False
        # A new connection re-subscribes: after a restart of the server the old one is gone.
        conn = await self.pools.connect_own()
        await self._exec(Q.queue_listen, {}, conn=conn)
        self._listen_conns[loop] = conn
        return conn, True

    async def queue_wait(self, *, queues: Sequence[str], timeout: float) -> bool:
        with connection_lost():
            conn, fresh = await self._listen_conn()
            if fresh:  # a NOTIFY sent before the subscription reached no one: look now
                return True
            wanted = set(queues)
            try:
                async for note in conn.notifies(timeout=timeout):
                    if note.payload in wanted:
                        return True
                return False
            except psycopg.Error:
                self._listen_conns.pop(asyncio.get_running_loop(), None)
                await conn.close()
                raise

    async def _listeners_close(self) -> None:
        # Only this loop's connection can be closed from here; another loop's goes with its loop.
        conn = self._listen_conns.pop(asyncio.get_running_loop(), None)
        if conn is not None:
            await conn.close()

    async def queue_notify(self, *, queues: Sequence[str]) -> None:
        await self._exec(Q.queue_notify, {"queues": list(queues)})

    async def queue_gauges(self, *, now: datetime, max_age: float = 0.0) -> list[QueueGauges]:
        rows = await self._rows(Q.queue_gauges, {"now": now, "max_age": max_age})
        return gauges_at(((r["queue"], r["depth"], r["since"], r["dead"]) for r in rows), now)
