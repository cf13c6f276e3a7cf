"""What every area of the Postgres driver stands on: the pools, and one way to run a named statement.

A statement's header declares its cardinality (``-- name: job_get :one``), and ``_run`` answers
by it: ``:many`` every row, ``:one`` the first row or None, ``:exec`` nothing. The typed views
(``_rows``, ``_row``, ``_exec``) refuse a statement declared otherwise, so a header that lies
fails at its first call rather than answering the wrong shape. ``_raw`` is the same dispatch
in the statement's positional form, for the hot statements (the single enqueue, through libpq
directly, and the worker's claim). ``_budgeted`` runs reads under a caller's time budget.

Every connection comes from ``_connection``, which raises a failure of the connection inside it
as the engine's ConnectionLost (engine/drivers/transient.py): the runtime knows no psycopg.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
from psycopg.rows import tuple_row

from engine.drivers.postgres import wire
from engine.drivers.postgres.pool import LoopPools
from engine.drivers.sqlfiles import Q, Query
from engine.drivers.transient import CONNECTION_ERRORS, first_line, lost
from engine.errors import (
    SLOW,
    X_DB_READ_ONLY,
    X_PERMISSION_DENIED,
    X_POOLER_PREPARED,
    X_QUERY_BUDGET,
    X_SQL_CATALOG,
    X_STATEMENT_TIMEOUT,
    X_TOO_LARGE,
    JobsError,
)
from engine.options import LONGEST_TIMEOUT_MS

if TYPE_CHECKING:  # a worker never writes one
    from engine.records import AuditEntry

T = TypeVar("T")
Conn = psycopg.AsyncConnection[Any]
Row = dict[str, Any]
Params = Mapping[str, Any]
# The first half of every worker presence lock's key (the two-int form, objsubid 2 in pg_locks),
# so an app's own advisory locks, taken with one bigint, never collide with them (workers.py
# takes them, maintenance.py looks for them). 0x6A6F6273 spells "jobs".
PRESENCE_NAMESPACE = 0x6A6F6273


def _expect(query: Query, cardinality: str) -> None:
    if query.cardinality != cardinality:
        raise JobsError(
            X_SQL_CATALOG,
            cause=f"statement {query.name!r} is declared :{query.cardinality} and was run as :{cardinality} "
            f"(when the header is right, the call is what changes: run it as :{query.cardinality})",
            fix=f"declare '-- name: {query.name} :{cardinality}' in sql/queries/{query.source}",
        )


async def _answer(cur: Any, cardinality: str) -> Any:
    if cardinality == "exec":
        return None
    if cardinality == "one":
        return await cur.fetchone()
    return await cur.fetchall()


def refused(exc: BaseException, user: str) -> JobsError | None:
    """The engine's error for a statement the server refused for who or where we are: the role
    lacks a privilege, the database takes no writes (a hot standby), or a pooler between us
    hands statements to several sessions; None for anything else."""
    first = first_line(exc)
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return JobsError(
            X_PERMISSION_DENIED,
            cause=f"the database refused role {user!r}: {first}",
            fix=f"GRANT jobs_writer TO {user}",
        )
    if isinstance(exc, psycopg.errors.ReadOnlySqlTransaction):
        return JobsError(
            X_DB_READ_ONLY,
            cause=f"the database takes no writes (a hot standby?): {first}",
            fix="export JOBS_DSN=postgresql://USER@PRIMARY/DB",
        )
    if isinstance(exc, (psycopg.errors.DuplicatePreparedStatement, psycopg.errors.InvalidSqlStatementName)):
        # A statement prepared on one server session met another: a pooler (PgBouncer in
        # transaction mode) hands each transaction whichever session is free.
        return JobsError(
            X_POOLER_PREPARED,
            cause=f"a prepared statement reached another server session ({first}): the connection goes "
            "through a pooler in transaction mode",
            fix="connect(dsn, prepared_statements=False); for jobs and jobs-console: export JOBS_NO_PREPARED_STATEMENTS=1",
        )
    return None


class _Connection:
    """pools.connection(), translating a connection failure on the way in or out, and a
    statement the server refused for our role or a read-only database (a class, not an
    asynccontextmanager: this wraps every statement, the hot ones included)."""

    __slots__ = ("_use", "_conn")

    def __init__(self, pools: LoopPools) -> None:
        self._use = pools.connection()
        self._conn: Conn | None = None

    async def __aenter__(self) -> Conn:
        try:
            conn = self._conn = await self._use.__aenter__()
        except CONNECTION_ERRORS as exc:
            raise lost(exc) from exc
        return conn

    async def __aexit__(self, et: type[BaseException] | None, e: BaseException | None, tb: Any) -> None:
        try:
            await self._use.__aexit__(et, e, tb)
        except CONNECTION_ERRORS as exc:
            raise lost(exc) from exc
        if isinstance(e, psycopg.errors.QueryCanceled):
            raise cancelled(e) from e
        if isinstance(e, psycopg.errors.ProgramLimitExceeded):  # an OperationalError, but the value's
            raise too_large(e) from e
        if isinstance(e, CONNECTION_ERRORS):
            raise lost(e) from e
        if isinstance(e, psycopg.errors.DatabaseError) and self._conn is not None:
            err = refused(e, self._conn.info.user)
            if err is not None:
                raise err from e


def too_large(exc: BaseException) -> JobsError:
    """A value past one of the server's own limits (sqlstate class 54: an index entry past 2,704
    bytes, a row past a page): the statement's, so not retried as a connection failure would be;
    it changed nothing. The engine's checks refuse such values first; this names what slipped by."""
    return JobsError(
        X_TOO_LARGE,
        cause=f"the database refused a value past its limits ({first_line(exc)}); nothing was changed",
        fix="shorten the value the cause names; for a long idempotency key, key by its digest (hashlib.sha256)",
    )


def cancelled(exc: BaseException) -> JobsError:
    """A statement the server cut off (its statement_timeout, or an administrator's cancel): one
    statement runs in one transaction, so what it would have changed is unchanged."""
    return JobsError(
        X_STATEMENT_TIMEOUT,
        cause=f"the server cancelled a statement ({first_line(exc, 'no reason given')}); "
        "what it would have changed is unchanged",
        fix="connect(dsn, statement_timeout_ms=30000)",
        meta={"condition": SLOW},
    )


async def _plan_generic(conn: Conn) -> None:
    """plan_generic, through a raw cursor (~20 us of client CPU less than conn.execute)."""
    await psycopg.AsyncRawCursor(conn).execute(Q.plan_generic.text)


async def _send(conn: Conn, cur: Any, query: Query, text: str, args: Any) -> None:
    """Execute one statement on ``cur``; one headed ``generic`` (sqlfiles) goes out after
    plan_generic in one pipeline: one round trip and, on an idle connection, one transaction, so
    the setting ends with the statement (inside a caller's transaction, with that transaction).
    psycopg's pipeline costs ~50 us of client CPU a call: the worker's claim goes through
    ``_raw`` instead, plan_generic ahead of it in libpq's pipeline (wire.py)."""
    if not query.generic:
        await cur.execute(text, args)
        return
    async with conn.pipeline():
        await _plan_generic(conn)
        await cur.execute(text, args)


class PostgresBase:
    dsn: str
    pools: LoopPools

    def __init__(
        self, dsn: str, *, pool_size: int, statement_timeout_ms: int | None, prepared_statements: bool = True
    ) -> None:
        self.dsn = dsn
        self.pools = LoopPools(
            dsn, max_size=pool_size, statement_timeout_ms=statement_timeout_ms, prepared_statements=prepared_statements
        )

    def _connection(self) -> _Connection:
        """``async with self._connection() as conn``: a connection of this loop's pools; a
        connection failure in the block is raised as ConnectionLost."""
        return _Connection(self.pools)

    async def _run(self, query: Query, params: Params, *, conn: Conn | None = None, tuples: bool = False) -> Any:
        """Run ``query`` on ``conn`` (taken from ``_connection``), else on a connection of its own,
        and answer as its header declares; ``tuples`` gives rows as tuples instead of dicts."""
        if conn is None:
            async with self._connection() as pooled:
                return await self._run(query, params, conn=pooled, tuples=tuples)
        cur = conn.cursor(row_factory=tuple_row) if tuples else conn.cursor()
        await _send(conn, cur, query, query.text, params)
        return await _answer(cur, query.cardinality)

    async def _rows(self, query: Query, params: Params, *, conn: Conn | None = None) -> list[Row]:
        _expect(query, "many")
        return await self._run(query, params, conn=conn)  # type: ignore[no-any-return]

    async def _row(self, query: Query, params: Params, *, conn: Conn | None = None) -> Row | None:
        _expect(query, "one")
        return await self._run(query, params, conn=conn)  # type: ignore[no-any-return]

    async def _exec(self, query: Query, params: Params, *, conn: Conn | None = None) -> None:
        _expect(query, "exec")
        await self._run(query, params, conn=conn)

    async def _raw(self, query: Query, values: Params) -> Any:
        """``_run`` for a hot statement, rows as tuples, in the statement's positional form,
        through libpq directly (wire.py): psycopg's conversion of named parameters, its cursor and
        its wait cost ~95 us of client CPU a call more. One headed ``generic`` has plan_generic
        ahead of it in one pipeline, as ``_send`` sends it. ``python -m bench.layers`` measures
        the single enqueue layer by layer."""
        text, names = query.positional
        args = tuple(values[n] for n in names)
        before = Q.plan_generic.text.encode() if query.generic else None
        async with self._connection() as conn:
            rows = await wire.fetch(conn, query.name, text, args, prepare=self.pools.prepared_statements, before=before)
        if query.cardinality == "many":
            return rows
        return (rows[0] if rows else None) if query.cardinality == "one" else None

    async def _raw_each(self, query: Query, params: Iterable[Params]) -> None:
        """``query`` once per parameter set, in one transaction and one pipeline, through libpq
        directly (wire.run_each): each statement out as soon as its parameters are built."""
        text, names = query.positional
        async with self._connection() as conn:
            await wire.run_each(
                conn,
                query.name,
                text,
                (tuple(p[n] for n in names) for p in params),
                prepare=self.pools.prepared_statements,
            )

    async def _pipelined(self, query: Query, params: Iterable[Params]) -> list[Any]:
        """``query`` once per parameter set, in one transaction, in pipeline mode: each statement
        goes out as soon as its parameters are built, so building the next set (``params`` is
        lazy) overlaps the server's work on this one. Each answer as ``_run`` gives it, in order."""
        sent: list[Any] = []
        async with self._connection() as conn, conn.transaction():
            async with conn.pipeline():
                if query.generic:
                    await _plan_generic(conn)
                for p in params:
                    cur = conn.cursor()
                    await cur.execute(query.text, p)  # type: ignore[arg-type]
                    sent.append(cur)
            return [await _answer(cur, query.cardinality) for cur in sent]

    async def _audit(self, entry: AuditEntry, conn: Conn) -> None:
        """Write ``entry`` on ``conn``, in the transaction of the change it records (an action's
        ``_budgeted`` block): the change and its audit row land together or not at all."""
        await self._exec(Q.audit_add, audit_params(entry), conn=conn)

    async def _audited(
        self, conn: Conn, query: Query, params: Params, entry: Callable[[Row], AuditEntry]
    ) -> Row | None:
        """``query``'s row on ``conn`` and, when the row says it ``changed``, the audit entry
        ``entry`` builds from it, in the same transaction (the caller's ``_budgeted`` block)."""
        r = await self._row(query, params, conn=conn)
        if r is not None and r["changed"]:
            await self._audit(entry(r), conn)
        return r

    async def _budgeted(self, budget_ms: int | None, what: str, fn: Callable[[Conn], Awaitable[T]]) -> T:
        """Run ``fn`` in one transaction whose every statement is cut off past ``budget_ms``
        (SET LOCAL statement_timeout via set_config); ``what`` names the command to rerun."""
        ms = budget_ms if budget_ms is not None else (self.pools.statement_timeout_ms or 0)
        async with self._connection() as conn:
            try:
                async with conn.transaction():
                    await self._row(Q.budget_set, {"ms": int(ms)}, conn=conn)
                    return await fn(conn)
            except psycopg.errors.QueryCanceled:
                raise JobsError(
                    X_QUERY_BUDGET,
                    cause=f"the {what} query ran past its {ms} ms budget and was cut off (nothing was changed)",
                    fix=f"jobsctl {what} --budget {min(LONGEST_TIMEOUT_MS, max(1000, int(ms) * 4)) / 1000:g}",
                    meta={"condition": SLOW},
                ) from None


def audit_params(entry: AuditEntry) -> dict[str, Any]:
    """audit_add's parameters: the entry's fields, its detail as a JSON document."""
    import orjson

    return {
        "at": entry.at,
        "actor": entry.actor,
        "action": entry.action,
        "target": entry.target,
        "tenant": entry.tenant,
        "note": entry.note,
        "detail": orjson.dumps(entry.detail).decode(),
    }
