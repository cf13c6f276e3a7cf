"""A hot statement sent through libpq directly (engine/drivers/postgres/wire.py): prepared once
a connection under a name of its own, its parameters typed by the statement, its errors psycopg's,
a cancellation leaving the connection usable."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import psycopg
import pytest

from engine.drivers.postgres import PostgresDriver, wire
from engine.errors import X_POOLER_PREPARED, JobsError
from engine.types import NewJob


@pytest.fixture
async def conn(pg_dsn: str) -> AsyncIterator[psycopg.AsyncConnection[object]]:
    c = await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True)
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
