"""PostgresDriver's outbox (sql/queries/outbox.sql). A stage runs on the CALLER's psycopg connection
inside the caller's transaction (I16), never on this driver's pool; the relay's claim, mark and
release run on the pool, each one statement, fenced on the claim's token (I17, I18)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import orjson
import psycopg
from psycopg.pq import TransactionStatus
from psycopg.rows import tuple_row

from engine.codec import dumps, orjson_default
from engine.drivers.base_outbox import OutboxTarget
from engine.drivers.outbox_lease import claim_lease_ms
from engine.drivers.postgres.base import PostgresBase
from engine.drivers.sqlfiles import Q
from engine.errors import X_INVALID_ARGUMENT, X_TOO_LARGE, JobsError
from engine.types import NewJob

if TYPE_CHECKING:  # engine.outbox_types is imported where a row is built: a worker that relays nothing never loads it
    from engine.outbox_types import OutboxRow, OutboxStats

_IDS = ("id", "claim_token", "job_id")


def outbox_row(d: dict[str, Any]) -> OutboxRow:
    from engine.outbox_types import OutboxRow

    kw = {k: d[k] for k in OutboxRow.__dataclass_fields__ if k in d}
    for k in _IDS:
        if kw.get(k) is not None:
            kw[k] = str(kw[k])
    return OutboxRow(**kw)


def stage_params(jobs: Sequence[NewJob], now: datetime) -> dict[str, Any]:
    """outbox_stage's parameters: the rows as one jsonb array, as job_enqueue takes a batch."""
    doc = orjson.dumps(
        [
            [
                j.id,
                j.name,
                j.queue,
                j.tenant,
                j.idempotency_key,
                orjson.Fragment(j.input_text or dumps(j.input, job=j.name)),
                j.max_attempts,
                j.run_at,
                j.priority,
                *(() if j.trace is None else (None, j.trace)),
            ]
            for j in jobs
        ],
        default=orjson_default,
    ).decode()
    return {"rows": doc, "now": now}


class _ConnectionTarget:
    """A caller's psycopg connection, checked: open, not aborted, not mid-statement."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self.is_async: bool | None = isinstance(conn, psycopg.AsyncConnection)
        status = conn.info.transaction_status if not conn.closed else TransactionStatus.UNKNOWN
        if status in (TransactionStatus.INERROR, TransactionStatus.UNKNOWN, TransactionStatus.ACTIVE):
            why = {
                TransactionStatus.INERROR: "its transaction is aborted (a statement failed): roll it back first",
                TransactionStatus.UNKNOWN: "it is closed or broken",
                TransactionStatus.ACTIVE: "a statement is running on it",
            }[status]
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"cannot stage on this connection: {why}",
                fix="with conn.transaction(): eng.stage(conn, job, input)",
            )
        # Outside autocommit, psycopg opens a transaction with the first statement and the caller
        # commits it: staging joins that one. In autocommit with no BEGIN there is nothing to join.
        self.in_transaction: bool = status == TransactionStatus.INTRANS or not conn.autocommit

    def stage(self, *, jobs: Sequence[NewJob], now: datetime) -> None:
        self._conn.execute(Q.outbox_stage.text, stage_params(jobs, now))

    async def astage(self, *, jobs: Sequence[NewJob], now: datetime) -> None:
        await self._conn.execute(Q.outbox_stage.text, stage_params(jobs, now))


class PostgresOutbox(PostgresBase):
    _outbox_listen_conns: dict[asyncio.AbstractEventLoop, psycopg.AsyncConnection[Any]]

    def outbox_target(self, tx: object) -> OutboxTarget:
        conn: Any = tx
        if not isinstance(tx, (psycopg.Connection, psycopg.AsyncConnection)):
            # A cursor: its connection, through a cursor of our own, so the caller's results stay put.
            conn = getattr(tx, "connection", None)
            if not isinstance(conn, (psycopg.Connection, psycopg.AsyncConnection)):
                raise JobsError(
                    X_INVALID_ARGUMENT,
                    cause=f"stage() takes a psycopg (3) Connection, AsyncConnection or cursor, not {type(tx).__name__}",
                    fix="with psycopg.connect(DSN) as conn, conn.transaction(): eng.stage(conn, job, input)",
                )
        return _ConnectionTarget(conn)

    async def outbox_claim(
        self, *, relay: str, token: str, limit: int, now: datetime, lease_ms: int
    ) -> list[OutboxRow]:
        from engine.outbox_types import OutboxRow

        lease = claim_lease_ms(lease_ms)
        params = {"relay": relay, "token": token, "limit": limit, "now": now, "lease_ms": lease}
        async with self._connection() as conn:
            cur = conn.cursor(row_factory=tuple_row)  # positional rows: a dict per row cost ~40 us
            await cur.execute(Q.outbox_claim.text, params)  # type: ignore[arg-type]
            rows = await cur.fetchall()
        until = now + timedelta(milliseconds=lease)
        return [
            OutboxRow(i, st, n, q, t, k, inp, ra, ma, pr, relay, token, now, until, None, None, att, err, fa, tr)
            for (i, st, n, q, t, k, inp, ra, ma, pr, att, err, fa, tr) in rows
        ]

    async def outbox_publish_batch(
        self, *, relay: str, token: str, limit: int, now: datetime, job_ids: Sequence[str]
    ) -> list[str] | None:
        params = {"relay": relay, "token": token, "limit": limit, "now": now, "job_ids": list(job_ids[:limit])}
        try:
            row = await self._row(Q.outbox_publish_batch, params)
        except psycopg.Error:  # a live key (I2) or a row the insert refuses: nothing was written
            return None
        except JobsError as exc:  # a value past the server's limits: a row's, found row by row
            if exc.code == X_TOO_LARGE:
                return None
            raise  # the database is away (ConnectionLost): the row-by-row path would fail too
        return list((row or {}).get("ids") or [])

    async def outbox_mark_published(
        self, *, token: str, published: Sequence[tuple[str, str]], now: datetime
    ) -> list[str]:
        if not published:
            return []
        params = {"token": token, "ids": [p[0] for p in published], "job_ids": [p[1] for p in published], "now": now}
        return [str(r["id"]) for r in await self._rows(Q.outbox_mark_published, params)]

    async def outbox_release(
        self, *, token: str, ids: Sequence[str], failed: str | None, error: str | None, now: datetime
    ) -> list[str]:
        if not ids:
            return []
        params = {"token": token, "ids": list(ids), "failed": failed, "error": error, "now": now}
        return [str(r["id"]) for r in await self._rows(Q.outbox_release, params)]

    # --- LISTEN: one dedicated connection per event loop, beside the queue's --------------------

    def _outbox_listeners(self) -> dict[asyncio.AbstractEventLoop, psycopg.AsyncConnection[Any]]:
        return self._outbox_listen_conns

    async def outbox_wait(self, *, timeout: float) -> bool:
        loop = asyncio.get_running_loop()
        conn = self._outbox_listeners().get(loop)
        if conn is None or conn.closed:  # a new connection re-subscribes (a restarted server forgot us)
            conn = await self.pools.connect_own()
            await conn.execute(Q.outbox_listen.text)  # type: ignore[arg-type]
            self._outbox_listeners()[loop] = conn
        try:
            async for _note in conn.notifies(timeout=timeout):
                return True
            return False
        except psycopg.Error:
            self._outbox_listeners().pop(loop, None)
            await conn.close()
            raise

    async def _outbox_listeners_close(self) -> None:
        conn = self._outbox_listeners().pop(asyncio.get_running_loop(), None)
        if conn is not None:
            await conn.close()

    # --- reads ------------------------------------------------------------------------------

    async def outbox_get(self, *, id: str) -> OutboxRow | None:
        row = await self._row(Q.outbox_get, {"id": id})
        return None if row is None else outbox_row(row)

    async def outbox_stats(self, *, now: datetime, count_cap: int, limit: int, alive_since: datetime) -> OutboxStats:
        from engine.outbox_types import OutboxHolder, OutboxStats, RelayRecord

        head = await self._row(Q.outbox_backlog, {"now": now, "cap": count_cap}) or {}
        holders = await self._rows(Q.outbox_holders, {"now": now, "limit": limit})
        failing = await self._rows(Q.outbox_failing, {"limit": limit})
        relays = await self._rows(Q.outbox_relays, {"since": alive_since})
        backlog = int(head.get("backlog") or 0)
        return OutboxStats(
            backlog=backlog,
            backlog_capped=backlog >= count_cap,
            oldest_staged_at=head.get("oldest"),
            published_last_hour=int(head.get("published_last_hour") or 0),
            holders=tuple(
                OutboxHolder(h["relay"] or "", str(h["token"]), h["rows"], h["lease_until"], h["oldest"])
                for h in holders
            ),
            failing=tuple(outbox_row(r) for r in failing),
            relays=tuple(RelayRecord(r["id"], r["started_at"], r["heartbeat_at"]) for r in relays),
        )

    async def outbox_head(self, *, limit: int) -> list[OutboxRow]:
        return [outbox_row(r) for r in await self._rows(Q.outbox_head, {"limit": limit})]

    async def outbox_relay_beat(self, *, relay: str, now: datetime) -> None:
        await self._exec(Q.outbox_relay_beat, {"relay": relay, "now": now})

    async def outbox_relay_gone(self, *, relay: str) -> None:
        await self._exec(Q.outbox_relay_gone, {"relay": relay})

    async def outbox_prune(
        self, *, leader: str, holder: str, term: int, now: datetime, before: datetime, limit: int
    ) -> int:
        row = await self._row(
            Q.outbox_prune,
            {"leader": leader, "holder": holder, "term": term, "now": now, "before": before, "limit": limit},
        )
        return int(row["pruned"]) if row else 0
