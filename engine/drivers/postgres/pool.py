"""Connections for the Postgres driver: one async pool per event loop, and clear errors.

A pool is bound to the loop that opened it, and the engine is called from several (the worker's,
an async web app's, the private loop that serves sync callers), so each loop gets its own pool.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import psycopg
from psycopg import conninfo as ci
from psycopg.rows import dict_row
from psycopg.types.json import set_json_loads
from psycopg_pool import AsyncConnectionPool

from engine.codec import loads
from engine.errors import X_DB_UNREACHABLE, X_DSN_INVALID, JobsError


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


def check_dsn(dsn: str) -> str:
    """Normalise a DSN (URL or key=value); a malformed one is X_DSN_INVALID, password unshown."""
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


class LoopPools:
    def __init__(self, dsn: str, *, min_size: int = 1, max_size: int = 10, statement_timeout_ms: int | None = None) -> None:
        self.dsn = dsn
        self.min_size = min_size
        self.max_size = max_size
        self.statement_timeout_ms = statement_timeout_ms
        self._pools: dict[asyncio.AbstractEventLoop, AsyncConnectionPool] = {}
        self._lock = threading.Lock()

    def _kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0}
        if self.statement_timeout_ms:
            kw["options"] = f"-c statement_timeout={int(self.statement_timeout_ms)}"
        return kw

    async def get(self) -> AsyncConnectionPool:
        loop = asyncio.get_running_loop()
        with self._lock:
            pool = self._pools.get(loop)
        if pool is not None:
            return pool
        # One direct connection first: a pool retries until its timeout and then reports only
        # "couldn't get a connection", while this answers at once with the server's own reason.
        try:
            probe = await psycopg.AsyncConnection.connect(self.dsn, **self._kwargs())
        except psycopg.OperationalError as exc:
            raise unreachable(self.dsn, exc) from None
        await probe.close()
        pool = AsyncConnectionPool(
            self.dsn, min_size=self.min_size, max_size=self.max_size, kwargs=self._kwargs(),
            configure=_configure, open=False, timeout=10.0, name="jobs",
        )
        try:
            await pool.open(wait=True, timeout=10.0)
        except Exception as exc:  # psycopg_pool.PoolTimeout wraps the connect error
            await pool.close()
            raise unreachable(self.dsn, exc) from None
        with self._lock:
            self._pools[loop] = pool
        return pool

    async def close_current(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            pool = self._pools.pop(loop, None)
        if pool is not None:
            await pool.close()

    def forget_all(self) -> list[AsyncConnectionPool]:
        with self._lock:
            pools = list(self._pools.values())
            self._pools.clear()
        return pools
