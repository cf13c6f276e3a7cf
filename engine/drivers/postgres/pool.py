"""Connections for the Postgres driver: one async pool per event loop, and clear errors.

A pool is bound to the loop that opened it, and the engine is called from several (the worker's,
an async web app's, the private loop that serves sync callers), so each loop gets its own pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import psycopg
from psycopg import conninfo as ci
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row
from psycopg.types.json import set_json_loads
from psycopg_pool import AsyncConnectionPool

from engine.codec import loads
from engine.drivers.postgres import wire
from engine.drivers.postgres.dsn import DEFAULT_CONNECT_TIMEOUT, unreachable
from engine.drivers.sqlfiles import Q
from engine.drivers.transient import condition_of, first_line
from engine.errors import SHUTTING_DOWN, ConnectionLost
from engine.forks import per_process

# A checkout that found the server had ended an idle connection says so once, with the server's
# reason, on this logger (a worker's JSON log names it jobs.pool.sessions-ended).
log = logging.getLogger("engine.pool")
SESSIONS_ENDED = "the server ended this loop's idle connections (%s): reopened them"


async def configure(conn: psycopg.AsyncConnection[Any]) -> None:
    """Every engine connection's set-up as it opens (the pool's, the lead's, a worker's presence
    and upkeep sessions'): the session settings the engine's statements and psycopg's loaders
    are written for (sql/queries/workers.sql, session_settings: a statement, not a startup
    option, which poolers refuse; unprepared, so a pooler in transaction mode takes it), rows as
    dicts, JSON through engine.codec."""
    await conn.execute(Q.session_settings.text, prepare=False)  # type: ignore[arg-type]
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


def _spoke_unasked(conn: psycopg.AsyncConnection[Any]) -> bool:
    """Whether an idle connection has something to read: the server spoke without being asked,
    which in practice is its goodbye (an error saying why, then the socket's end)."""
    try:
        return wire.unread(conn.pgconn.socket)
    except (psycopg.Error, OSError, ValueError):  # closed already: no socket
        return True


async def _gone(conn: psycopg.AsyncConnection[Any]) -> psycopg.Error | None:
    """Why a connection that spoke unasked is gone (the server's error), or None when it answers
    an empty statement (a notice or a setting's new value, which the server may also send unasked)."""
    try:
        await conn.execute("")
    except psycopg.Error as exc:
        return exc
    return None


class _Use:
    """``async with pools.connection() as conn``: the loop's lead connection when it is free,
    else one from the loop's pool; either is handed back idle, or dropped when broken."""

    __slots__ = ("_pools", "_lead", "_pooled")

    def __init__(self, pools: LoopPools) -> None:
        self._pools = pools
        self._lead: _Lead | None = None
        self._pooled: Any = None

    async def __aenter__(self) -> psycopg.AsyncConnection[Any]:
        conn = await self._take()
        if _spoke_unasked(conn):
            gone = await _gone(conn)
            if gone is not None:
                # The server ended it while it sat idle (a restart, a failover, a terminate,
                # idle_session_timeout): so it did the loop's others. Nothing was sent on it, so
                # the caller's statement goes out on a connection opened now instead of failing.
                said = first_line(gone)
                await self._drop(conn)
                self._pools.reset_current()
                log.warning(SESSIONS_ENDED, said)
                try:
                    conn = await self._take()
                except ConnectionLost as exc:  # not back: a server going away says so first
                    ended = condition_of(gone)
                    raise ConnectionLost(
                        f"the server ended the connection ({said}); then {exc.cause}",
                        condition=ended if ended == SHUTTING_DOWN else exc.meta.get("condition", ended),
                    ) from exc
        return conn

    async def _take(self) -> psycopg.AsyncConnection[Any]:
        lead, pool = await self._pools._current()
        if lead.conn is not None and not lead.busy:
            lead.busy = True  # no await since the check: the loop cannot hand it out twice
            self._lead = lead
            return lead.conn
        if lead.conn is None and not lead.reviving:
            self._pools._revive(lead)
        self._pooled = pool.connection()
        return await self._pooled.__aenter__()  # type: ignore[no-any-return]

    async def _drop(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Hand back a connection found gone at checkout: the lead's is closed, a pooled one goes
        back to its pool, which discards it."""
        lead, self._lead = self._lead, None
        if lead is not None:
            lead.conn = None
            lead.busy = False
            with contextlib.suppress(Exception):
                await conn.close()
            return
        pooled, self._pooled = self._pooled, None
        await pooled.__aexit__(None, None, None)

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
            orphan = self._pools._leads.get(asyncio.get_running_loop()) is not lead  # reset meanwhile
            if status != TransactionStatus.IDLE or orphan:  # broken, left mid-statement by a cancel, or let go
                lead.conn = None
                if conn is not None:
                    with contextlib.suppress(Exception):
                        await conn.close()
        finally:
            lead.busy = False


class LoopPools:
    def __init__(
        self,
        dsn: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        statement_timeout_ms: int | None = None,
        prepared_statements: bool = True,
    ) -> None:
        self.dsn = dsn
        self.prepared_statements = prepared_statements
        self.min_size = min_size
        self.max_size = max_size
        self.statement_timeout_ms = statement_timeout_ms
        self._pools: dict[asyncio.AbstractEventLoop, AsyncConnectionPool] = {}
        self._leads: dict[asyncio.AbstractEventLoop, _Lead] = {}
        self._lock = threading.Lock()
        self._revivals: set[asyncio.Task[None]] = set()
        # Pools and connections being closed in the background, held until they are: a pool no
        # one holds is collected with its tasks pending ("Task was destroyed but it is
        # pending!") and its connections open. Nothing cancels these.
        self._closing: set[asyncio.Task[None]] = set()
        # Each loop's end watch (_watch_end), and what its end closes: the driver sets the latter
        # to everything it holds for a loop.
        self._watches: dict[asyncio.AbstractEventLoop, AsyncGenerator[None, None]] = {}
        self.on_loop_end: Callable[[], Awaitable[None]] = self.close_current
        per_process(self)

    def forsake(self) -> list[Any]:
        """In a forked child (engine/forks.py): the parent's pools and lead connections,
        forgotten; the child's first statement opens its own."""
        held: list[Any] = [self._pools, self._leads, self._revivals, self._closing, self._watches]
        self._pools, self._leads, self._revivals, self._closing, self._watches = {}, {}, set(), set(), {}
        self._lock = threading.Lock()  # another thread of the parent may have held it at the fork
        return held

    def _kwargs(self) -> dict[str, Any]:
        """Every engine connection's: autocommit, the connect timeout unless the DSN names one,
        and the engine's statement timeout after the DSN's own options when it has one (the last
        of a setting given twice wins). No options at all otherwise: a pooler such as PgBouncer
        refuses a connection that sends any."""
        parts = ci.conninfo_to_dict(self.dsn)
        # Each statement prepared on its first run (the hot ones run thousands of times a second);
        # none behind a pooler in transaction mode, where the next statement may reach another
        # server session.
        kw: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0 if self.prepared_statements else None}
        if parts.get("connect_timeout") in (None, ""):
            kw["connect_timeout"] = DEFAULT_CONNECT_TIMEOUT
        if self.statement_timeout_ms:
            given = str(parts.get("options") or "")
            kw["options"] = f"{given} -c statement_timeout={int(self.statement_timeout_ms)}".strip()
        return kw

    async def connect_own(self) -> psycopg.AsyncConnection[Any]:
        """A connection of the caller's own, outside the pool (a lead, a LISTEN, a worker's
        presence or upkeep session), set up as the pool's are, with their connect timeout."""
        conn = await wire.Connection.connect(self.dsn, **self._kwargs())
        await configure(conn)
        return conn

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
            probe = await self.connect_own()
        except psycopg.OperationalError as exc:
            raise unreachable(self.dsn, exc) from None
        pool = AsyncConnectionPool(
            self.dsn,
            min_size=self.min_size,
            max_size=self.max_size,
            kwargs=self._kwargs(),
            connection_class=wire.Connection,
            configure=configure,
            open=False,
            timeout=10.0,
            name="jobs",
        )
        try:
            await pool.open(wait=True, timeout=10.0)
        except BaseException as exc:
            # Failed, or its caller cancelled meanwhile (a job aborted while the server had no
            # connection slot to give): the pool and the probe are closed, not left behind.
            closing = self._close_later(pool, probe)
            if not isinstance(exc, Exception):
                raise
            await asyncio.shield(closing)
            raise unreachable(self.dsn, exc) from None  # psycopg_pool.PoolTimeout wraps the connect error
        with self._lock:
            if loop in self._pools:  # another caller of this loop opened them meanwhile
                lead, mine = self._leads[loop], self._pools[loop]
            else:
                lead, mine = self._leads[loop], self._pools[loop] = _Lead(probe), pool
        if mine is not pool:
            await asyncio.shield(self._close_later(pool, probe))
        elif loop not in self._watches:
            await self._watch_end(loop)
        return lead, mine

    async def _watch_end(self, loop: asyncio.AbstractEventLoop) -> None:
        """Close what this loop holds when the loop ends, on the loop: a process that runs many
        loops (asyncio.run per call, asgiref's async_to_sync, a test per loop) would otherwise
        keep two connections open for every loop it ran. The hook is an async generator started
        here, which the loop's shutdown_asyncgens (the end of asyncio.run and of asyncio.Runner)
        closes before the loop closes. A loop closed without it is swept by the next new one."""

        async def watch() -> AsyncGenerator[None, None]:
            try:
                yield
            finally:
                self._watches.pop(loop, None)
                await self.on_loop_end()

        self._sweep_closed()
        gen = self._watches[loop] = watch()
        await gen.__anext__()  # started: the loop now knows it

    def _sweep_closed(self) -> None:
        """Forget the pools of loops closed without shutdown_asyncgens (their tasks are gone with
        them; their connections close as they are collected)."""
        with self._lock:
            for loop in [at for at in self._pools if at.is_closed()]:
                self._pools.pop(loop, None)
                self._leads.pop(loop, None)
                self._watches.pop(loop, None)

    def _revive(self, lead: _Lead) -> None:
        """Reconnect a lead connection that broke, in the background: callers use the pool meanwhile."""

        async def revive() -> None:
            try:
                conn = await self.connect_own()
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

    def reset_current(self) -> None:
        """Forget this loop's pool and lead connection now, closing them in the background: the
        next caller opens new ones with a direct connection, which answers at once (or fails
        with the server's reason), where the old pool would retry on its own backoff."""
        loop = asyncio.get_running_loop()
        with self._lock:
            pool = self._pools.pop(loop, None)
            lead = self._leads.pop(loop, None)
        if pool is None and lead is None:
            return
        idle_lead = lead.conn if lead is not None and lead.conn is not None and not lead.busy else None
        self._close_later(*(c for c in (idle_lead, pool) if c is not None), timeout=1.0)

    def _close_later(self, *closables: Any, timeout: float = 5.0) -> asyncio.Task[None]:
        """Close ``closables`` (pools, each waiting ``timeout`` for its tasks, and connections) in
        a task of the running loop that this object holds until it ends."""

        async def close() -> None:
            for closable in closables:
                with contextlib.suppress(Exception):
                    if isinstance(closable, AsyncConnectionPool):
                        await closable.close(timeout=timeout)
                    else:
                        await closable.close()

        task = asyncio.get_running_loop().create_task(close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)
        return task

    async def close_current(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            pool = self._pools.pop(loop, None)
            lead = self._leads.pop(loop, None)
        if lead is not None and lead.conn is not None:
            await lead.conn.close()
        if pool is not None:
            await pool.close()
        await self.closed_behind()

    async def closed_behind(self, timeout: float = 5.0) -> None:
        """Wait (at most ``timeout``) for what this loop is closing in the background."""
        loop = asyncio.get_running_loop()
        closing = [t for t in self._closing if t.get_loop() is loop]
        if closing:
            await asyncio.wait(closing, timeout=timeout)

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
            self._watches.clear()
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
