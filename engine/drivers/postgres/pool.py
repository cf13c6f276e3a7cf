"""Connections for the Postgres driver: one async pool per event loop, and clear errors.

A pool is bound to the loop that opened it, and the engine is called from several (the worker's,
an async web app's, the private loop that serves sync callers), so each loop gets its own pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

import psycopg
from psycopg import conninfo as ci
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row
from psycopg.types.json import set_json_loads
from psycopg_pool import AsyncConnectionPool

from engine.codec import loads
from engine.errors import X_DB_UNREACHABLE, X_DSN_INVALID, X_NOT_IMPLEMENTED, JobsError


def safe_dsn(dsn: str) -> str:
    """The DSN with any password removed: what may be shown on screen or in a log (I25)."""
    try:
        parts = ci.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "<unparseable dsn>"
    parts.pop("password", None)
    return ci.make_conninfo("", **{k: v for k, v in parts.items() if v is not None})


def describe_target(dsn: str) -> str:
    try:
        parts = ci.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "<unparseable dsn>"
    host = parts.get("host") or "localhost"
    port = parts.get("port") or "5432"
    return f"database {parts.get('dbname') or parts.get('user') or '?'} on {host}:{port}"


def refuse_other_storage(dsn: str) -> None:
    """A URL naming another storage (redis://, nats://, mysql://) is X_NOT_IMPLEMENTED, naming
    what is supported, rather than a DSN psycopg cannot parse."""
    scheme, sep, _ = dsn.strip().partition("://")
    scheme = scheme.lower()
    if sep and scheme and not scheme.startswith("postgres") and scheme.replace("+", "").isalnum():
        raise JobsError(
            X_NOT_IMPLEMENTED,
            cause=f"{scheme}:// names a storage the engine does not implement: jobs live in PostgreSQL "
            "(postgresql://, postgres:// or key=value) or, for tests and demos, in memory (memory://)",
            fix="export JOBS_DSN=postgresql://USER@HOST:5432/DBNAME",
        )


def check_dsn(dsn: str) -> str:
    """Normalise a DSN (URL or key=value); a malformed one is X_DSN_INVALID, password unshown."""
    refuse_other_storage(dsn)
    try:
        return ci.make_conninfo(dsn)
    except psycopg.ProgrammingError as exc:
        msg = str(exc)
        parts_pw = dsn.split("@", 1)[0] if "@" in dsn else ""
        if parts_pw and ":" in parts_pw.split("//", 1)[-1]:
            msg = msg.replace(parts_pw.split(":")[-1], "***")
        raise JobsError(
            X_DSN_INVALID,
            cause=f"the DSN cannot be parsed: {msg.splitlines()[0] if msg else 'malformed'}",
            fix="jobs install --dsn postgresql://USER@HOST:5432/DBNAME",
        ) from None


def unreachable(dsn: str, exc: BaseException) -> JobsError:
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    pw = ci.conninfo_to_dict(dsn).get("password")
    if pw:
        reason = reason.replace(str(pw), "***")
    return JobsError(
        X_DB_UNREACHABLE,
        cause=f"could not connect to {describe_target(dsn)}: {reason}",
        fix="check the server is up and the DSN is right: psql \"$JOBS_DSN\" -c 'select 1'",
    )


async def _configure(conn: psycopg.AsyncConnection[Any]) -> None:
    conn.row_factory = dict_row  # type: ignore[assignment]
    # json/jsonb columns read through engine.codec (orjson, exact past 64 bits), on this
    # connection only: the app's own psycopg connections keep their loader.
    set_json_loads(loads, conn)


class _Lead:
    """One loop's lead connection, outside its pool: a caller that finds it free takes it, so a
    caller that is alone (a sequential enqueue, a worker's claim or ack) skips the pool's checkout
    and return, ~130 us a statement on this project's machine (as much as the insert itself).
    Concurrent callers take pooled connections."""

    __slots__ = ("conn", "busy", "reviving")

    def __init__(self, conn: psycopg.AsyncConnection[Any] | None) -> None:
        self.conn = conn
        self.busy = False
        self.reviving = False


class _Use:
    """``async with pools.connection() as conn``: the loop's lead connection when it is free,
    else one from the loop's pool; either is handed back idle, or dropped when broken."""

    __slots__ = ("_pools", "_lead", "_pooled")

    def __init__(self, pools: LoopPools) -> None:
        self._pools = pools
        self._lead: _Lead | None = None
        self._pooled: Any = None

    async def __aenter__(self) -> psycopg.AsyncConnection[Any]:
        lead, pool = await self._pools._current()
        if lead.conn is not None and not lead.busy:
            lead.busy = True  # no await since the check: the loop cannot hand it out twice
            self._lead = lead
            return lead.conn
        if lead.conn is None and not lead.reviving:
            self._pools._revive(lead)
        self._pooled = pool.connection()
        return await self._pooled.__aenter__()  # type: ignore[no-any-return]

    async def __aexit__(self, et: type[BaseException] | None, e: BaseException | None, tb: Any) -> None:
        lead = self._lead
        if lead is None:
            await self._pooled.__aexit__(et, e, tb)
            return
        try:
            conn = lead.conn
            status = (
                conn.pgconn.transaction_status if conn is not None and not conn.closed else TransactionStatus.UNKNOWN
            )
            if status in (TransactionStatus.INTRANS, TransactionStatus.INERROR):
                try:
                    await conn.rollback()  # type: ignore[union-attr]
                except psycopg.Error:
                    status = TransactionStatus.UNKNOWN
                else:
                    status = TransactionStatus.IDLE
            if status != TransactionStatus.IDLE:  # broken, or left mid-statement by a cancel
                lead.conn = None
                if conn is not None:
                    with contextlib.suppress(Exception):
                        await conn.close()
        finally:
            lead.busy = False


class LoopPools:
    def __init__(
        self, dsn: str, *, min_size: int = 1, max_size: int = 10, statement_timeout_ms: int | None = None
    ) -> None:
        self.dsn = dsn
        self.min_size = min_size
        self.max_size = max_size
        self.statement_timeout_ms = statement_timeout_ms
        self._pools: dict[asyncio.AbstractEventLoop, AsyncConnectionPool] = {}
        self._leads: dict[asyncio.AbstractEventLoop, _Lead] = {}
        self._lock = threading.Lock()
        self._revivals: set[asyncio.Task[None]] = set()

    def _kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0}
        if self.statement_timeout_ms:
            kw["options"] = f"-c statement_timeout={int(self.statement_timeout_ms)}"
        return kw

    def connection(self) -> _Use:
        """``async with pools.connection() as conn``: this loop's lead connection when it is
        free, else a pooled one (opened on first use)."""
        return _Use(self)

    async def get(self) -> AsyncConnectionPool:
        return (await self._current())[1]

    async def _current(self) -> tuple[_Lead, AsyncConnectionPool]:
        loop = asyncio.get_running_loop()
        pool = self._pools.get(loop)  # a dict read is atomic: the lock guards the writes
        if pool is not None:
            return self._leads[loop], pool
        # One direct connection first: a pool retries until its timeout and then reports only
        # "couldn't get a connection", while this answers at once with the server's own reason.
        # It stays open as the loop's lead connection.
        try:
            probe = await psycopg.AsyncConnection.connect(self.dsn, **self._kwargs())
        except psycopg.OperationalError as exc:
            raise unreachable(self.dsn, exc) from None
        await _configure(probe)
        pool = AsyncConnectionPool(
            self.dsn,
            min_size=self.min_size,
            max_size=self.max_size,
            kwargs=self._kwargs(),
            configure=_configure,
            open=False,
            timeout=10.0,
            name="jobs",
        )
        try:
            await pool.open(wait=True, timeout=10.0)
        except Exception as exc:  # psycopg_pool.PoolTimeout wraps the connect error
            await pool.close()
            await probe.close()
            raise unreachable(self.dsn, exc) from None
        with self._lock:
            if loop in self._pools:  # another caller of this loop opened them meanwhile
                lead, mine = self._leads[loop], self._pools[loop]
            else:
                lead, mine = self._leads[loop], self._pools[loop] = _Lead(probe), pool
        if mine is not pool:
            await pool.close()
            await probe.close()
        return lead, mine

    def _revive(self, lead: _Lead) -> None:
        """Reconnect a lead connection that broke, in the background: callers use the pool meanwhile."""

        async def revive() -> None:
            try:
                conn = await psycopg.AsyncConnection.connect(self.dsn, **self._kwargs())
                await _configure(conn)
                if self._leads.get(asyncio.get_running_loop()) is lead:
                    lead.conn = conn
                else:  # the pools were closed meanwhile: nobody would close it
                    await conn.close()
            except psycopg.Error:  # the server is away: the pool's own reconnection reports it
                await asyncio.sleep(1.0)
            finally:
                lead.reviving = False

        lead.reviving = True
        task = asyncio.get_running_loop().create_task(revive())
        self._revivals.add(task)
        task.add_done_callback(self._revivals.discard)

    async def close_current(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            pool = self._pools.pop(loop, None)
            lead = self._leads.pop(loop, None)
        if lead is not None and lead.conn is not None:
            await lead.conn.close()
        if pool is not None:
            await pool.close()

    def forget_all(self) -> list[tuple[asyncio.AbstractEventLoop, Any]]:
        """Every loop's pool and lead connection, forgotten, each with its loop: the caller
        closes them (on their own loop). A lead connection's reconnection still under way on the
        calling loop is cancelled."""
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        for task in list(self._revivals):
            if task.get_loop() is loop:
                task.cancel()
        with self._lock:
            closable: list[tuple[asyncio.AbstractEventLoop, Any]] = [
                (at, lead.conn) for at, lead in self._leads.items() if lead.conn is not None
            ]
            closable += list(self._pools.items())
            self._pools.clear()
            self._leads.clear()
        return closable


async def close_on(loop: asyncio.AbstractEventLoop, closable: Any, *, timeout: float = 5.0) -> None:
    """Close a pool or a connection of ``loop``. A connection closes from anywhere; a pool's tasks
    end only on their own loop (else they are destroyed pending when it closes): here when it is
    the running loop, on its thread when it runs there, not at all when it no longer runs (its
    tasks ended with it)."""
    here = asyncio.get_running_loop()
    try:
        if loop is here or isinstance(closable, psycopg.AsyncConnection):  # its close awaits nothing
            await closable.close()
        elif loop.is_running():
            done = asyncio.run_coroutine_threadsafe(closable.close(), loop)
            await asyncio.wait_for(asyncio.wrap_future(done), timeout)
    except Exception:  # its loop went away meanwhile: so did its connections
        pass
