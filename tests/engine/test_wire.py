"""A hot statement sent through libpq directly (engine/drivers/postgres/wire.py): prepared once
a connection under a name of its own, its parameters typed by the statement, its errors psycopg's,
a cancellation leaving the connection usable; on an engine connection the socket's reader stays
registered between two statements and is let go before psycopg reads or the socket closes."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from engine.drivers.postgres import PostgresDriver, wire
from engine.errors import X_POOLER_PREPARED, JobsError
from engine.types import NewJob


@pytest.fixture(params=["psycopg", "engine"])
async def conn(pg_dsn: str, request: pytest.FixtureRequest) -> AsyncIterator[psycopg.AsyncConnection[object]]:
    kind = wire.Connection if request.param == "engine" else psycopg.AsyncConnection
    c = await kind.connect(pg_dsn, autocommit=True)
    try:
        yield c
    finally:
        await c.close()


async def _prepared(conn: psycopg.AsyncConnection[object]) -> list[str]:
    cur = await conn.execute("select name from pg_prepared_statements order by name", prepare=False)
    return [str(r[0]) for r in await cur.fetchall()]  # type: ignore[index]


async def test_a_statement_is_prepared_once_a_connection_under_its_own_name(
    conn: psycopg.AsyncConnection[object],
) -> None:
    for n in range(3):
        assert await wire.fetch(conn, "double", "select $1::int * 2", (n,), prepare=True) == [(2 * n,)]
    assert await _prepared(conn) == ["jobs_double"]
    assert await wire.fetch(conn, "plain", "select $1::int + 1", (1,), prepare=False) == [(2,)]
    assert await _prepared(conn) == ["jobs_double"]  # unprepared: the unnamed statement


async def test_a_parameter_takes_the_statements_type_not_its_first_values(
    conn: psycopg.AsyncConnection[object],
) -> None:
    # psycopg dumps 1 as an int2: a statement prepared with the first call's types would refuse 2**40.
    assert await wire.fetch(conn, "big", "select $1::bigint + 0", (1,), prepare=True) == [(1,)]
    assert await wire.fetch(conn, "big", "select $1::bigint + 0", (2**40,), prepare=True) == [(2**40,)]


async def test_a_server_error_is_psycopgs_and_a_failed_prepare_is_tried_again(
    conn: psycopg.AsyncConnection[object],
) -> None:
    with pytest.raises(psycopg.errors.DivisionByZero):
        await wire.fetch(conn, "div", "select 1 / $1::int", (0,), prepare=True)
    assert await wire.fetch(conn, "div", "select 1 / $1::int", (1,), prepare=True) == [(1,)]
    for _ in range(2):  # not "does not exist": a prepare that failed is not taken as done
        with pytest.raises(psycopg.errors.UndefinedTable):
            await wire.fetch(conn, "nope", "select * from no_such_table", (), prepare=True)


async def test_a_statement_cancelled_while_out_leaves_its_connection_usable(
    conn: psycopg.AsyncConnection[object],
) -> None:
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(wire.fetch(conn, "sleep", "select pg_sleep(60)", (), prepare=True), 0.2)
    assert await wire.fetch(conn, "one", "select 1", (), prepare=True) == [(1,)]


GENERIC = b"select set_config('plan_cache_mode', 'force_generic_plan', true)"
SETTING = ("mode", "select current_setting('plan_cache_mode')", ())


async def test_a_statement_ahead_in_the_pipeline_lasts_for_its_transaction_only(
    conn: psycopg.AsyncConnection[object],
) -> None:
    for _ in range(2):
        assert await wire.fetch(conn, *SETTING, prepare=True, before=GENERIC) == [("force_generic_plan",)]
        assert conn.pgconn.pipeline_status == psycopg.pq.PipelineStatus.OFF
        assert await wire.fetch(conn, *SETTING, prepare=True) == [("auto",)]  # ended with the transaction
    cur = await conn.execute("select current_setting('plan_cache_mode')")  # psycopg's own, after it
    assert await cur.fetchone() == ("auto",)


async def test_a_refusal_in_a_pipeline_is_the_statement_that_refused_and_leaves_the_connection_usable(
    conn: psycopg.AsyncConnection[object],
) -> None:
    with pytest.raises(psycopg.errors.DivisionByZero):  # not "pipeline aborted" for the one after it
        await wire.fetch(conn, *SETTING, prepare=True, before=b"select 1 / 0")
    with pytest.raises(psycopg.errors.UndefinedTable):
        await wire.fetch(conn, "nope", "select * from no_such_table", (), prepare=False, before=GENERIC)
    assert conn.pgconn.pipeline_status == psycopg.pq.PipelineStatus.OFF
    assert await wire.fetch(conn, *SETTING, prepare=True) == [("auto",)]


async def test_a_piped_statement_cancelled_while_out_leaves_its_connection_usable(
    conn: psycopg.AsyncConnection[object],
) -> None:
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(wire.fetch(conn, "sleep", "select pg_sleep(60)", (), prepare=True, before=GENERIC), 0.2)
    assert conn.pgconn.pipeline_status == psycopg.pq.PipelineStatus.OFF
    assert await wire.fetch(conn, *SETTING, prepare=True) == [("auto",)]


async def test_a_statement_larger_than_the_sockets_buffer_is_sent_whole_alone_or_piped(
    conn: psycopg.AsyncConnection[object],
) -> None:
    # 8 MB does not fit the socket's send buffer: libpq asks to wait for it to drain, which
    # psycopg's own wait then does from where the statement's generator stood.
    big = "x" * (8 << 20)
    assert await wire.fetch(conn, "len", "select length($1::text)", (big,), prepare=True) == [(len(big),)]
    piped = await wire.fetch(conn, "len", "select length($1::text)", (big,), prepare=True, before=GENERIC)
    assert piped == [(len(big),)]
    assert conn.pgconn.pipeline_status == psycopg.pq.PipelineStatus.OFF
    assert await wire.fetch(conn, *SELECT, prepare=True) == [(1,)]


INSERT = ("put", "insert into wire_each values ($1::int)")


async def _kept(conn: psycopg.AsyncConnection[object]) -> list[int]:
    cur = await conn.execute("select k from wire_each order by k")
    return [int(r[0]) for r in await cur.fetchall()]  # type: ignore[index]


async def test_statements_run_each_in_one_transaction_that_a_refusal_rolls_back_whole(
    conn: psycopg.AsyncConnection[object],
) -> None:
    await conn.execute("create temp table wire_each (k int primary key)")
    with pytest.raises(psycopg.errors.UniqueViolation):  # the third refused: the first two with it
        await wire.run_each(conn, *INSERT, iter([(1,), (2,), (1,)]), prepare=True)
    assert await _kept(conn) == []
    await wire.run_each(conn, *INSERT, iter([(1,), (2,)]), prepare=True)
    await wire.run_each(conn, *INSERT, iter([(3,)]), prepare=False)
    assert await _kept(conn) == [1, 2, 3]
    assert conn.pgconn.pipeline_status == psycopg.pq.PipelineStatus.OFF


async def test_an_exception_building_the_next_statement_rolls_back_the_ones_sent_and_is_raised(
    conn: psycopg.AsyncConnection[object],
) -> None:
    await conn.execute("create temp table wire_each (k int primary key)")

    def each() -> Any:
        yield (1,)
        yield (2,)
        raise ValueError("row 3 is bad")

    with pytest.raises(ValueError, match="row 3 is bad"):
        await wire.run_each(conn, *INSERT, each(), prepare=True)
    assert conn.pgconn.pipeline_status == psycopg.pq.PipelineStatus.OFF
    assert await _kept(conn) == []
    assert await wire.fetch(conn, *SELECT, prepare=True) == [(1,)]


async def test_a_name_already_prepared_on_the_session_names_the_pooler(pg_dsn: str) -> None:
    driver = PostgresDriver(pg_dsn)
    await driver.open()
    try:
        async with driver.pools.connection() as lead:  # the session a pooler would hand over
            await lead.execute("prepare jobs_job_enqueue_one as select 1")
        job = NewJob("0193a8a0-0000-7000-8000-000000000001", "pooler.x", "pooler", "k", {}, 3)
        with pytest.raises(JobsError) as err:
            await driver.job_enqueue(jobs=[job], now=datetime.now(UTC))
        assert err.value.code == X_POOLER_PREPARED
        assert 'prepared statement "jobs_job_enqueue_one" already exists' in err.value.cause
    finally:
        await driver.close()


class Readers:
    """The file descriptors a loop has a reader for, counted as they are registered."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.fds: set[int] = set()
        self.added = 0
        self.watched: dict[int, asyncio.Event] = {}
        add, remove = loop.add_reader, loop.remove_reader

        def add_reader(fd: int, callback: Callable[..., Any], *args: Any) -> None:
            add(fd, callback, *args)
            self.fds.add(fd)
            self.added += 1

        def remove_reader(fd: int) -> bool:
            self.fds.discard(fd)
            if fd in self.watched:
                self.watched[fd].set()
            return remove(fd)

        loop.add_reader = add_reader  # type: ignore[method-assign]
        loop.remove_reader = remove_reader  # type: ignore[method-assign]

    def removal(self, fd: int) -> asyncio.Event:
        """Set when ``fd``'s reader is next removed (another connection's removals are not it)."""
        self.watched[fd] = asyncio.Event()
        return self.watched[fd]


SELECT = ("one", "select $1::int", (1,))


async def test_an_engine_connection_keeps_its_reader_between_statements_and_psycopg_still_reads_it(
    pg_dsn: str,
) -> None:
    async with await wire.Connection.connect(pg_dsn, autocommit=True) as conn:
        readers = Readers(asyncio.get_running_loop())
        fd = conn.pgconn.socket
        for _ in range(3):
            assert await wire.fetch(conn, *SELECT, prepare=True) == [(1,)]
        assert readers.added == 1 and readers.fds == {fd}  # registered once for every statement
        # psycopg's own wait registers the socket itself: the reader is let go first, or both
        # statements would wait on a socket nobody reads.
        cur = await asyncio.wait_for(conn.execute("select 2"), 5)
        assert await cur.fetchone() == (2,)
        assert await asyncio.wait_for(wire.fetch(conn, *SELECT, prepare=True), 5) == [(1,)]
        assert readers.fds == {fd}
    assert readers.fds == set()  # closed: let go before the socket was


async def test_a_plain_psycopg_connection_is_left_with_no_reader_after_a_statement(pg_dsn: str) -> None:
    readers = Readers(asyncio.get_running_loop())
    async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as conn:
        assert await wire.fetch(conn, *SELECT, prepare=True) == [(1,)]
        assert readers.fds == set()
        with pytest.raises(psycopg.errors.DivisionByZero):
            await wire.fetch(conn, "div", "select 1 / $1::int", (0,), prepare=True)
        assert readers.fds == set()


async def test_a_server_that_speaks_unasked_makes_the_reader_let_go_and_the_next_statement_read_it(
    pg_dsn: str,
) -> None:
    readers = Readers(asyncio.get_running_loop())
    async with await wire.Connection.connect(pg_dsn, autocommit=True) as conn:
        assert await wire.fetch(conn, *SELECT, prepare=True) == [(1,)]
        removed = readers.removal(conn.pgconn.socket)
        async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as admin:
            await admin.execute("select pg_terminate_backend(%s)", (conn.info.backend_pid,))
        # The goodbye: a reader left registered on a socket nobody reads would be called again
        # and again while the loop spins; it lets itself go instead.
        await asyncio.wait_for(removed.wait(), 5)
        assert readers.fds == set()
        with pytest.raises(psycopg.OperationalError):  # read by the next statement, as psycopg's would
            await asyncio.wait_for(wire.fetch(conn, *SELECT, prepare=True), 5)


async def test_an_engine_connection_closed_from_another_loops_thread_lets_its_reader_go_there(
    pg_dsn: str,
) -> None:
    other = asyncio.new_event_loop()
    thread = threading.Thread(target=other.run_forever, daemon=True)
    thread.start()
    try:

        async def on_other() -> tuple[Readers, wire.Connection]:
            readers = Readers(asyncio.get_running_loop())
            conn = await wire.Connection.connect(pg_dsn, autocommit=True)
            assert await wire.fetch(conn, *SELECT, prepare=True) == [(1,)]
            return readers, conn

        readers, conn = await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(on_other(), other))
        assert readers.fds == {conn.pgconn.socket}
        await conn.close()  # from this loop, while the other runs
        assert readers.fds == set()
    finally:
        other.call_soon_threadsafe(other.stop)
        thread.join(5)
        other.close()


async def test_the_drivers_connections_are_engine_connections(pg_dsn: str) -> None:
    driver = PostgresDriver(pg_dsn)
    await driver.open()
    try:
        async with driver.pools.connection() as lead:
            assert isinstance(lead, wire.Connection)
        pool = await driver.pools.get()
        async with pool.connection() as pooled:
            assert isinstance(pooled, wire.Connection)
    finally:
        await driver.close()
