"""A hot statement sent through libpq directly, below psycopg's cursor.

psycopg's cursor spends ~45 us of client CPU a call on what a statement run this way does not
need (the query's conversion, the cursor, the bookkeeping of its prepared-statement cache): a
fifth of a single enqueue's round trip. Here the statement is prepared once per connection under
a name of its own (``jobs_<statement>``; psycopg names its own ``_pg3_<n>``), its parameters are
dumped as text by psycopg's dumpers and its rows loaded by psycopg's loaders. The parameters go
untyped, as asyncpg sends them: the server infers each from the statement once, at its prepare,
so a value's Python type (an int small enough for int2) never fixes a parameter's type for the
calls after it.

The wait is psycopg's protocol generator driven by a reader that stays registered with the loop
between two statements on an engine connection (``Connection``), as asyncpg's transport does:
psycopg's own wait registers the socket, arms a timer and unregisters it on every round trip,
~35 us of client CPU a call here (``python -m bench.layers``). A ``Connection`` lets the reader
go before psycopg waits on it or closes it, and the reader lets itself go when the server speaks
unasked, leaving what it said for whoever reads next. On any other psycopg connection the reader
is let go at the end of the call. A caller cancelled mid-statement cancels it on the server, as
psycopg does.

A statement may have one ahead of it in libpq's pipeline mode (``before``: the worker's claim
has plan_generic), both in one round trip and one implicit transaction, where psycopg's pipeline
cost the claim ~170 us of client CPU a call more. ``run_each`` sends a statement per parameter
set in one transaction and one pipeline, each as soon as it is built (a batch's chunks).

Without prepared statements (a pooler in transaction mode) the statement goes as an unnamed one,
parsed on every call. Errors are psycopg's own (``error_from_result``), so the caller translates
them as it does any statement's.
"""

from __future__ import annotations

import asyncio
import select
import threading
import weakref
from collections.abc import Generator, Iterable
from typing import Any

import psycopg
from psycopg import abc, errors, generators, pq
from psycopg.adapt import PyFormat, Transformer
from psycopg.waiting import READY_R, WAIT_R, WAIT_RW, WAIT_W

Conn = psycopg.AsyncConnection[Any]

_OK = (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK)
_INTERRUPTED = (asyncio.CancelledError, KeyboardInterrupt)
CANCEL_TIMEOUT = 5.0  # psycopg's own, for a statement whose caller was interrupted


class _Session:
    """What one connection keeps: its transformer, the names it prepared, and the loop its
    socket's reader is registered with (None when it is not) with the future a statement awaits."""

    __slots__ = ("tx", "prepared", "loop", "fd", "waiter")

    def __init__(self, conn: Conn) -> None:
        self.tx: abc.Transformer = Transformer(conn)
        self.prepared: set[bytes] = set()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.fd = -1
        self.waiter: asyncio.Future[None] | None = None


_sessions: weakref.WeakKeyDictionary[Conn, _Session] = weakref.WeakKeyDictionary()


class Connection(psycopg.AsyncConnection[Any]):
    """The engine's connections: psycopg's, with the socket's reader a statement of ``fetch``
    leaves registered let go before psycopg waits on the socket itself or closes it."""

    async def wait(self, gen: abc.PQGen[abc.RV], *args: Any, **kwargs: Any) -> abc.RV:
        self._let_go()
        return await super().wait(gen, *args, **kwargs)

    async def close(self) -> None:
        self._let_go()
        await super().close()

    def _let_go(self) -> None:
        session = _sessions.get(self)
        if session is not None and session.loop is not None:
            _stop_reading(session)


async def fetch(
    conn: Conn, name: str, text: str, args: tuple[Any, ...], *, prepare: bool, before: bytes | None = None
) -> list[tuple[Any, ...]]:
    """The rows of ``text`` (positional ``$n`` parameters) run with ``args`` on ``conn``, an idle
    autocommit connection: one round trip, two on the connection's first call of ``name``.
    ``before``, a statement with no parameters, goes ahead of it in one pipeline: the same round
    trip and one implicit transaction, which a ``set_config(..., true)`` in it lasts for."""
    pg = conn.pgconn
    async with conn.lock:  # the transformer's state is this statement's until its rows are loaded
        session = _session(conn)
        try:
            tx = session.tx
            params = tx.dump_sequence(args, [PyFormat.TEXT] * len(args))
            statement = await _statement(conn, session, name, text, prepare)
            if before is not None:
                pg.enter_pipeline_mode()
                try:
                    pg.send_query_params(before, None)
                    _send(pg, statement, text, params)
                    pg.pipeline_sync()
                    results = await _wait(conn, session, _piped(pg))
                finally:
                    _leave_pipeline(pg)
            else:
                _send(pg, statement, text, params)
                results = await _wait(conn, session, generators.execute(pg))
            res = _check(conn, results)
        finally:
            _done(conn, session)
        tx.set_pgresult(res)
        return tx.load_rows(0, res.ntuples, tuple)


def _session(conn: Conn) -> _Session:
    session = _sessions.get(conn)
    if session is None:
        session = _sessions[conn] = _Session(conn)
    return session


async def _statement(conn: Conn, session: _Session, name: str, text: str, prepare: bool) -> bytes | None:
    """The name ``text`` is prepared under on this connection, prepared at its first call; None
    without prepared statements."""
    if not prepare:
        return None
    statement = f"jobs_{name}".encode()
    if statement not in session.prepared:
        conn.pgconn.send_prepare(statement, text.encode())
        _check(conn, await _wait(conn, session, generators.execute(conn.pgconn)))
        session.prepared.add(statement)
    return statement


def _done(conn: Conn, session: _Session) -> None:
    """A statement's end: a connection other than the engine's keeps no reader."""
    if session.loop is not None and not isinstance(conn, Connection):
        _stop_reading(session)


def _send(pg: pq.abc.PGconn, statement: bytes | None, text: str, params: Any) -> None:
    if statement is None:  # unprepared: parsed on every call
        pg.send_query_params(text.encode(), params)
    else:
        pg.send_query_prepared(statement, params)


def _piped(pg: pq.abc.PGconn) -> Generator[Any, Any, list[pq.abc.PGresult]]:
    """A pipeline's results up to its sync (its statements' in order, each one's end unmarked):
    psycopg's protocol generator for one, written for a pipeline of a few statements."""
    while pg.flush():  # nonblocking: the rest is sent as the socket takes it
        ready = yield WAIT_RW
        if ready & READY_R:
            pg.consume_input()
    out: list[pq.abc.PGresult] = []
    while True:
        while pg.is_busy():
            yield WAIT_R
            pg.consume_input()
        res = pg.get_result()
        if res is None:  # the end of one statement's results
            continue
        if res.status == pq.ExecStatus.PIPELINE_SYNC:
            return out
        out.append(res)


def _leave_pipeline(pg: pq.abc.PGconn) -> None:
    """Out of pipeline mode; a pipeline left with results unread (an interrupted wait that could
    not read them) closes the connection, whose state is then unknown."""
    try:
        if pg.pipeline_status != pq.PipelineStatus.OFF:
            pg.exit_pipeline_mode()
    except psycopg.Error:
        pg.finish()


async def _wait(conn: Conn, session: _Session, gen: abc.PQGen[abc.RV]) -> abc.RV:
    """``gen`` run to its end, each read awaited on the session's registered reader."""
    try:
        state = next(gen)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    loop = asyncio.get_running_loop()
    while True:
        if state & WAIT_W:  # the statement did not fit the socket's buffer: psycopg's own wait
            if session.loop is not None:
                _stop_reading(session)
            return await conn.wait(_resumed(state, gen))
        if session.loop is not loop:
            if session.loop is not None:
                _stop_reading(session)
            session.fd = conn.pgconn.socket
            loop.add_reader(session.fd, _readable, session, conn)  # conn lives while it is registered
            session.loop = loop
        session.waiter = waiter = loop.create_future()
        try:
            await waiter
        except BaseException as exc:
            _stop_reading(session)
            if isinstance(exc, _INTERRUPTED):
                await _interrupted(conn, state, gen)
            raise
        finally:
            session.waiter = None
        try:
            state = gen.send(READY_R)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        except BaseException:  # the connection failed: it is closed by whoever holds it
            _stop_reading(session)
            raise


def _readable(session: _Session, conn: Conn) -> None:
    waiter = session.waiter
    if waiter is not None:
        if not waiter.done():
            waiter.set_result(None)
    elif unread(session.fd):  # the server spoke unasked (a goodbye, a notice): left for the next reader
        _stop_reading(session)
    # else a readiness the loop saw before the statement it woke read its answer: nothing to do


def unread(fd: int) -> bool:
    """Whether a socket has something to read now: one poll with no wait, ~1 us (poll, not
    select: select refuses a descriptor past 1023, which a busy process's connections have)."""
    poll = select.poll()
    poll.register(fd, select.POLLIN)
    return bool(poll.poll(0))


def _stop_reading(session: _Session) -> None:
    """Unregister the session's reader from its loop: here when that loop is running here or not
    at all, else on the loop's own thread (a connection closed from another loop's thread),
    before the socket can close."""
    loop, session.loop = session.loop, None
    if loop is None or loop.is_closed():
        return
    try:
        here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        here = None
    if here is loop or not loop.is_running():
        loop.remove_reader(session.fd)
        return
    done = threading.Event()

    def remove() -> None:
        loop.remove_reader(session.fd)
        done.set()

    loop.call_soon_threadsafe(remove)
    done.wait(1.0)


async def _interrupted(conn: Conn, state: Any, gen: abc.PQGen[Any]) -> None:
    """What psycopg does for a wait interrupted mid-statement: cancel it on the server and read
    its end, else close the connection, which is then in an unknown state."""
    if conn.pgconn.transaction_status != pq.TransactionStatus.ACTIVE:
        return
    try:
        await conn.cancel_safe(timeout=CANCEL_TIMEOUT)
        await conn.wait(_resumed(state, gen), timeout=CANCEL_TIMEOUT)
    except errors.QueryCanceled:
        pass
    except BaseException as exc:
        conn.pgconn.finish()
        if not isinstance(exc, Exception):
            raise


def _resumed(state: Any, gen: abc.PQGen[abc.RV]) -> Generator[Any, Any, abc.RV]:
    """``gen`` from the wait state it last yielded, for psycopg's own wait to take over."""
    ready = yield state
    while True:
        try:
            state = gen.send(ready)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        ready = yield state


def _check(conn: Conn, results: list[pq.abc.PGresult]) -> pq.abc.PGresult:
    """The last result, once none refused (the first that did is raised: in a pipeline, the
    statements after it only say they were skipped)."""
    for res in results:
        if res.status not in _OK:
            raise errors.error_from_result(res, encoding=conn.info.encoding)
    return results[-1]


async def run_each(conn: Conn, name: str, text: str, each: Iterable[tuple[Any, ...]], *, prepare: bool) -> None:
    """``text`` run once for each parameter tuple ``each`` yields, in one transaction and one
    pipeline: each statement goes out as soon as its parameters are built, so the server runs it
    while the next is built. A refusal rolls them all back and is raised; so does an exception
    from ``each``, after the ones already sent are rolled back."""
    pg = conn.pgconn
    async with conn.lock:
        session = _session(conn)
        try:
            tx = session.tx
            statement = await _statement(conn, session, name, text, prepare)
            failed: BaseException | None = None
            pg.enter_pipeline_mode()
            try:
                pg.send_query_params(b"begin", None)
                try:
                    for args in each:
                        params = tx.dump_sequence(args, [PyFormat.TEXT] * len(args))
                        _send(pg, statement, text, params)
                        pg.flush()  # out now: the server runs it while the next is built
                except BaseException as exc:
                    failed = exc
                pg.send_query_params(b"rollback" if failed else b"commit", None)
                pg.pipeline_sync()
                results = await _wait(conn, session, _piped(pg))
            finally:
                _leave_pipeline(pg)
            if pg.transaction_status != pq.TransactionStatus.IDLE:  # a refusal skipped the end
                pg.send_query_params(b"rollback", None)
                await _wait(conn, session, generators.execute(pg))
            if failed is not None:
                raise failed
            _check(conn, results)
        finally:
            _done(conn, session)
