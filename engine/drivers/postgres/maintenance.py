"""PostgresDriver's maintenance: leader lease, rescuer, pruner, throughput rollup, worker
reaper, index and table upkeep (sql/queries/maintenance.sql), every mutation fenced on the leader's term."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from engine.drivers.base_maintenance import not_listed, schema_name
from engine.drivers.postgres.base import PRESENCE_NAMESPACE, Conn, PostgresBase, cancelled
from engine.drivers.sqlfiles import Q, Query
from engine.drivers.transient import CONNECTION_ERRORS, first_line, lost
from engine.errors import X_PERMISSION_DENIED, JobsError
from engine.types import JobState, Orphan

if TYPE_CHECKING:  # engine.records is imported where one is built: a worker never loads it
    from engine.records import IndexRebuilt, IndexSize, SettledBucket, TableRows

# The first key of the rebuild lock (index_rebuild_lock), "jobr": apart from the workers'
# presence locks (PRESENCE_NAMESPACE) and an app's own one-bigint locks.
REBUILD_NAMESPACE = 0x6A6F6272
# How long a seal or a drop waits for a reader of the bucket before it gives up for this pass:
# every ack queues behind a rename that waits, so the wait stays shorter than a claim's.
BUCKET_LOCK_TIMEOUT = "100ms"
# What the server answers a REINDEX, a VACUUM or a bucket's drop naming no such index, table or
# bucket (or an object of another kind): the caller's name, not taken from the listing.
_NO_SUCH = (
    psycopg.errors.UndefinedTable,
    psycopg.errors.UndefinedObject,
    psycopg.errors.WrongObjectType,
    psycopg.errors.InvalidSchemaName,
)


def _composed(query: Query, **names: str) -> sql.Composed:
    """``query``'s text with each ``{name}`` (schema.name) quoted by sql.Identifier. REINDEX, DROP
    INDEX and VACUUM take an identifier, never a parameter, so these statements of sql/ are
    completed here (as engine/backfills/keyset.py composes the one statement whose table is the
    app's); the names come from the catalog (index_sizes, index_leftovers, table_rows), never
    from a caller."""
    return sql.SQL(query.text).format(**{k: sql.Identifier(*v.split(".", 1)) for k, v in names.items()})


class PostgresMaintenance(PostgresBase):
    @contextlib.asynccontextmanager
    async def _upkeep_connection(self) -> AsyncIterator[Conn]:
        """A connection of its own, never a pool's, closed after: REINDEX CONCURRENTLY and VACUUM
        run outside any transaction block (autocommit), they and a bucket's drop for as long as
        they take (no statement timeout), and the pool's connections stay on the hot path
        meanwhile."""
        conn: Conn = await self.pools.connect_own()
        async with conn:
            await self._exec(Q.upkeep_session, {}, conn=conn)
            yield conn

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

    async def settled_buckets(self, *, leader: str, holder: str, term: int, now: datetime) -> list[SettledBucket]:
        from engine.records import SettledBucket

        rows = await self._rows(Q.settled_buckets, {"leader": leader, "holder": holder, "term": term, "now": now})
        return [SettledBucket(int(r["n"]), r["opened_at"], r["sealed_at"]) for r in rows]

    async def settled_seal(self, *, leader: str, holder: str, term: int, now: datetime) -> int | None:
        fence = {"leader": leader, "holder": holder, "term": term, "now": now}
        row = await self._bucket_call(Q.settled_seal, {**fence, "lock_timeout": BUCKET_LOCK_TIMEOUT})
        return None if row is None else int(row["sealed"])

    async def settled_drop(
        self,
        *,
        leader: str,
        holder: str,
        term: int,
        now: datetime,
        bucket: int,
        before: datetime,
        dead_before: datetime,
    ) -> int | None:
        params = {"leader": leader, "holder": holder, "term": term, "now": now, "bucket": bucket}
        params |= {"before": before, "dead_before": dead_before, "lock_timeout": BUCKET_LOCK_TIMEOUT}
        try:
            row = await self._bucket_call(Q.settled_drop, params)
        except _NO_SUCH as exc:  # no table jobs.job_done_<bucket>: no sealed bucket of that number
            raise not_listed("bucket", bucket, f"not sealed: {first_line(exc)}") from exc
        return None if row is None or row["dropped"] is None else int(row["dropped"])

    async def _bucket_call(self, query: Query, params: dict[str, object]) -> dict[str, Any] | None:
        """A seal or a drop, on a connection of its own without a statement timeout (a drop deletes
        a whole bucket's attempts, steps and history: one cut off would leave the bucket for ever);
        None when a reader held the bucket past BUCKET_LOCK_TIMEOUT."""
        try:
            async with self._upkeep_connection() as conn:
                return await self._row(query, params, conn=conn)
        except psycopg.errors.LockNotAvailable:
            return None
        except psycopg.errors.InsufficientPrivilege as exc:
            said = first_line(exc)
            raise JobsError(
                X_PERMISSION_DENIED,
                cause=f"this role may not seal or drop the buckets of settled rows ({said}); the pruner "
                "deletes them row by row instead",
                fix="grant execute on all functions in schema jobs to jobs_writer (README, 'Database roles')",
            ) from exc
        except psycopg.errors.QueryCanceled as exc:
            raise cancelled(exc) from exc
        except CONNECTION_ERRORS as exc:
            raise lost(exc) from exc

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

    async def index_sizes(self, *, leader: str, holder: str, term: int, now: datetime) -> list[IndexSize]:
        from engine.records import IndexSize

        params = {"leader": leader, "holder": holder, "term": term, "now": now}
        rows = await self._rows(Q.index_sizes, params)
        return [IndexSize(r["index"], int(r["bytes"]), int(r["baseline"])) for r in rows]

    async def index_rebuild(
        self, *, leader: str, holder: str, term: int, now: datetime, index: str, before: int
    ) -> IndexRebuilt | None:
        from engine.records import IndexRebuilt

        fence = {"leader": leader, "holder": holder, "term": term, "now": now}
        acting = schema_name("index", index)
        try:
            async with self._upkeep_connection() as conn:  # the rebuild lock is this session's
                lock = await self._row(Q.index_rebuild_lock, {"namespace": REBUILD_NAMESPACE}, conn=conn)
                if not (lock and lock["held"]):
                    return None  # another session rebuilds (a leader before a change of lease)
                for left in await self._rows(Q.index_leftovers, {}, conn=conn):
                    acting = f"{left['schema']}.{left['name']}"
                    await conn.execute(_composed(Q.index_leftover_drop, index=acting))
                acting = index
                held = await self._row(Q.index_leader_holds, fence, conn=conn)
                rebuilt = None
                if held and held["holds"]:
                    started = time.monotonic()
                    await conn.execute(_composed(Q.index_rebuild, index=index))
                    seconds = time.monotonic() - started
                    after = await self._row(Q.index_baseline_reset, {**fence, "index": index}, conn=conn)
                    rebuilt = IndexRebuilt(index, before, int(after["bytes"]) if after else before, seconds)
                # Freed here, not by the close: the server ends a closed session a moment after the
                # client, and the leader's next rebuild in the same pass must not find it held.
                await self._exec(Q.index_rebuild_unlock, {"namespace": REBUILD_NAMESPACE}, conn=conn)
                return rebuilt
        except psycopg.errors.InsufficientPrivilege as exc:
            raise _not_owner(acting, exc) from exc
        except _NO_SUCH as exc:  # a leftover's drop says `if exists`: only the name given is missing
            raise not_listed("index", index, first_line(exc)) from exc
        except psycopg.errors.QueryCanceled as exc:
            raise cancelled(exc) from exc
        except CONNECTION_ERRORS as exc:
            raise lost(exc) from exc

    async def table_rows(self, *, leader: str, holder: str, term: int, now: datetime) -> list[TableRows]:
        from engine.records import TableRows

        params = {"leader": leader, "holder": holder, "term": term, "now": now}
        rows = await self._rows(Q.table_rows, params)
        return [TableRows(r["name"], int(r["live"]), int(r["dead"]), bool(r["owned"]), bool(r["held"])) for r in rows]

    async def table_vacuum(self, *, table: str) -> float:
        schema_name("table", table)
        try:
            async with self._upkeep_connection() as conn:
                started = time.monotonic()
                await conn.execute(_composed(Q.table_vacuum, table=table))
                return time.monotonic() - started
        except _NO_SUCH as exc:
            raise not_listed("table", table, first_line(exc)) from exc
        except psycopg.errors.QueryCanceled as exc:
            raise cancelled(exc) from exc
        except CONNECTION_ERRORS as exc:
            raise lost(exc) from exc


def _not_owner(index: str, exc: BaseException) -> JobsError:
    said = first_line(exc)
    return JobsError(
        X_PERMISSION_DENIED,
        cause=f"only the owner of the jobs schema may rebuild index {index} ({said}); it keeps growing until rebuilt",
        fix=f"run REINDEX INDEX CONCURRENTLY {index} as the jobs schema's owner (the role that ran jobsctl migrate)",
    )
