"""A hot statement sent through libpq directly, below psycopg's cursor.

psycopg's cursor spends ~45 us of client CPU a call on what a statement run this way does not
need (the query's conversion, the cursor, the bookkeeping of its prepared-statement cache): a
fifth of a single enqueue's round trip. Here the statement is prepared once per connection under
a name of its own (``jobs_<statement>``; psycopg names its own ``_pg3_<n>``), its parameters are
dumped as text by psycopg's dumpers and its rows loaded by psycopg's loaders, and the wait is
psycopg's (``AsyncConnection.wait``, which cancels the statement on the server when the caller
is cancelled). The parameters go untyped, as asyncpg sends them: the server infers each from the
statement once, at its prepare, so a value's Python type (an int small enough for int2) never
fixes a parameter's type for the calls after it.

Without prepared statements (a pooler in transaction mode) the statement goes as an unnamed one,
parsed on every call. Errors are psycopg's own (``error_from_result``), so the caller translates
them as it does any statement's.
"""

from __future__ import annotations

import weakref
from typing import Any

import psycopg
from psycopg import abc, errors, generators, pq
from psycopg.adapt import PyFormat, Transformer

Conn = psycopg.AsyncConnection[Any]

_OK = (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK)


class _Session:
    """What one connection keeps: its transformer and the names it prepared."""

    __slots__ = ("tx", "prepared")

    def __init__(self, conn: Conn) -> None:
        self.tx: abc.Transformer = Transformer(conn)
        self.prepared: set[bytes] = set()


_sessions: weakref.WeakKeyDictionary[Conn, _Session] = weakref.WeakKeyDictionary()


async def fetch(conn: Conn, name: str, text: str, args: tuple[Any, ...], *, prepare: bool) -> list[tuple[Any, ...]]:
    """The rows of ``text`` (positional ``$n`` parameters) run with ``args`` on ``conn``, an
    autocommit connection: one round trip, two on the connection's first call of ``name``."""
    pg = conn.pgconn
    async with conn.lock:  # the transformer's state is this statement's until its rows are loaded
        session = _sessions.get(conn)
        if session is None:
            session = _sessions[conn] = _Session(conn)
        tx = session.tx
        params = tx.dump_sequence(args, [PyFormat.TEXT] * len(args))
        if not prepare:
            pg.send_query_params(text.encode(), params)
        else:
            statement = f"jobs_{name}".encode()
            if statement not in session.prepared:
                pg.send_prepare(statement, text.encode())
                _check(conn, await conn.wait(generators.execute(pg)))
                session.prepared.add(statement)
            pg.send_query_prepared(statement, params)
        res = _check(conn, await conn.wait(generators.execute(pg)))
        tx.set_pgresult(res)
        return tx.load_rows(0, res.ntuples, tuple)


def _check(conn: Conn, results: list[pq.abc.PGresult]) -> pq.abc.PGresult:
    res = results[-1]
    if res.status not in _OK:
        raise errors.error_from_result(res, encoding=conn.info.encoding)
    return res
