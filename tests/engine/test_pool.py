"""The Postgres driver's connections: each loop's lead connection serves a caller that is alone,
concurrent callers take pooled ones, and a lead connection that breaks is replaced."""

from __future__ import annotations

import asyncio
import os
import resource
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from engine.api import Engine
from engine.drivers.postgres import PostgresDriver
from engine.drivers.postgres import pool as pool_module
from engine.drivers.postgres.dsn import DEFAULT_CONNECT_TIMEOUT
from engine.errors import ConnectionLost
from engine.introspect import Introspector
from engine.jobs import job
from engine.schema import migration_status


@job(name="pool.hello", queue="pool", idempotency_key=lambda inp: str(inp["n"]))
async def _pool_hello(ctx, inp):  # type: ignore[no-untyped-def]
    return inp


def _lead(driver: PostgresDriver) -> psycopg.AsyncConnection:  # type: ignore[type-arg]
    lead = driver.pools._leads[asyncio.get_running_loop()]
    assert lead.conn is not None
    return lead.conn


async def _backend(driver: PostgresDriver) -> int:
    async with driver.pools.connection() as conn:
        row = await (await conn.execute("select pg_backend_pid() as pid")).fetchone()
    return int(row["pid"])  # type: ignore[index]


async def test_a_caller_alone_takes_the_lead_connection_and_concurrent_ones_the_pool(pg_dsn: str) -> None:
    driver = PostgresDriver(pg_dsn)
    try:
        await driver.open()
        lead_pid = _lead(driver).info.backend_pid
        assert {await _backend(driver) for _ in range(5)} == {lead_pid}

        async def held(seconds: float) -> int:
            async with driver.pools.connection() as conn:
                row = await (await conn.execute("select pg_backend_pid() as pid, pg_sleep(%s)", [seconds])).fetchone()
            return int(row["pid"])  # type: ignore[index]

        pids = await asyncio.gather(held(0.2), held(0.2), held(0.2))
        assert pids[0] == lead_pid and len(set(pids)) == 3  # the lead was busy: the others pooled
    finally:
        await driver.close()


async def test_a_lead_connection_left_in_a_transaction_is_handed_back_idle(pg_dsn: str) -> None:
    driver = PostgresDriver(pg_dsn)
    try:
        await driver.open()
        async with driver.pools.connection() as conn:
            await conn.execute("begin")
            await conn.execute("select 1")
        assert _lead(driver).info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        await driver.open()  # the next caller gets a usable connection
    finally:
        await driver.close()


async def test_a_lead_connection_broken_mid_statement_is_replaced_and_work_goes_on(pg_dsn: str) -> None:
    driver = PostgresDriver(pg_dsn)
    try:
        await driver.open()
        old = _lead(driver).info.backend_pid
        with pytest.raises(ConnectionLost):  # the one caller that held it sees the break
            async with driver._connection() as conn:
                await conn.execute("select pg_terminate_backend(pg_backend_pid()), pg_sleep(5)")
        await driver.open()  # from the pool while the lead reconnects
        lead = driver.pools._leads[asyncio.get_running_loop()]
        await asyncio.gather(*driver.pools._revivals)  # the reconnection, in the background on this loop
        assert lead.conn is not None and lead.conn.info.backend_pid != old
        assert await _backend(driver) == lead.conn.info.backend_pid
    finally:
        await driver.close()


async def _held(driver: PostgresDriver) -> list[int]:
    """Three callers at once (the lead and two pooled connections), each its backend's pid."""

    async def held() -> int:
        async with driver.pools.connection() as conn:
            row = await (await conn.execute("select pg_backend_pid() as pid, pg_sleep(0.2)")).fetchone()
        return int(row["pid"])  # type: ignore[index]

    return list(await asyncio.gather(held(), held(), held()))


async def test_connections_the_server_ended_while_idle_are_replaced_before_a_statement_goes_out(pg_dsn: str) -> None:
    # A restart, a failover or idle_session_timeout ends idle sessions: the next callers' statements
    # go out on new connections instead of failing once per connection the loop held.
    driver = PostgresDriver(pg_dsn)
    try:
        await driver.open()
        before = await _held(driver)
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            ended = admin.execute(
                "select count(*) filter (where pg_terminate_backend(pid, 5000)) from pg_stat_activity"
                " where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'"
            ).fetchone()
        assert ended is not None and ended[0] >= len(set(before)) == 3  # each gone when it returns
        await driver.open()  # the lead's statement: no ConnectionLost
        after = await _held(driver)  # the pool's: none either
        assert len(set(after)) == 3 and not set(after) & set(before)
    finally:
        await driver.close()


def test_a_loop_that_ends_closes_the_connections_it_opened(pg_dsn: str) -> None:
    # asyncio.run per call (a script, asgiref's async_to_sync, a test per loop): each loop's pool
    # and lead connection close as that loop ends, not when the engine does.
    driver = PostgresDriver(pg_dsn)

    async def one_call() -> tuple[Any, Any]:
        await driver.open()
        loop = asyncio.get_running_loop()
        return driver.pools._pools[loop], driver.pools._leads[loop].conn

    held = [asyncio.run(one_call()) for _ in range(3)]
    assert [(pool.closed, conn.closed) for pool, conn in held] == [(True, True)] * 3
    assert driver.pools._pools == {} and driver.pools._leads == {}
    asyncio.run(driver.close())


async def test_the_engines_sessions_set_what_its_statements_need_whatever_the_databases_defaults(
    pg_dsn: str,
) -> None:
    # Some databases default to repeatable read or serializable, where a claim or an upsert fails
    # on rows another worker changed (could not serialize access), or to a DateStyle or an
    # IntervalStyle whose text psycopg cannot read (every read raised NotImplementedError).
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        name = psycopg.sql.Identifier(admin.execute("select current_database()").fetchone()[0])  # type: ignore[index]
        for setting in (
            "default_transaction_isolation = 'serializable'",
            "datestyle = 'SQL, DMY'",
            "intervalstyle = 'iso_8601'",
            "timezone = 'Asia/Kolkata'",
        ):
            admin.execute(psycopg.sql.SQL("alter database {} set " + setting).format(name))  # type: ignore[operator]
    with psycopg.connect(pg_dsn) as other:  # a session of anyone else's
        assert other.execute("show transaction_isolation").fetchone() == ("serializable",)
        assert other.execute("show datestyle").fetchone() == ("SQL, DMY",)
    eng = Engine(
        PostgresDriver(psycopg.conninfo.make_conninfo(pg_dsn, options="-c work_mem=7MB"), statement_timeout_ms=4000)
    )
    driver: PostgresDriver = eng.driver  # type: ignore[assignment]
    try:

        async def settings() -> tuple[str, ...]:
            async with driver.pools.connection() as conn:
                cur = await conn.execute(
                    "select current_setting('transaction_isolation') as i, current_setting('datestyle') as d,"
                    " current_setting('intervalstyle') as s, current_setting('work_mem') as w,"
                    " current_setting('statement_timeout') as t, pg_sleep(0.1)"
                )
                row = await cur.fetchone()
            return row["i"], row["d"], row["s"], row["w"], row["t"]  # type: ignore[index]

        await driver.open()
        seen = await asyncio.gather(settings(), settings(), settings())  # the lead and two pooled
        assert seen == [("read committed", "ISO, DMY", "postgres", "7MB", "4s")] * 3
        job_id = (await eng.aenqueue(_pool_hello, {"n": 1})).id
        assert (await eng.aget(job_id)).created_at.utcoffset() == timedelta(0)  # read, in UTC
        assert [q.name for q in (await Introspector(eng).queues()).queues] == ["pool"]
        assert migration_status(pg_dsn).pending == ()  # the migrations' own connection too
    finally:
        await eng.aclose()


async def test_a_connection_past_descriptor_1023_is_checked_without_a_round_trip(pg_dsn: str) -> None:
    # A busy process (a web server's sockets and files) opens its connections past descriptor
    # 1023, where select() refuses: the checkout's look must still answer, not cost a statement.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    filler = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    driver = PostgresDriver(pg_dsn)
    try:
        await driver.open()
        lead = _lead(driver)
        assert lead.pgconn.socket > 1023
        assert not pool_module._spoke_unasked(lead)  # idle and well: nothing to read
    finally:
        await driver.close()
        for fd in filler:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


async def test_a_listen_connection_is_set_up_as_the_pools_are(pg_dsn: str) -> None:
    # Its connect timeout (a frozen server would hold the worker's wake-ups for libpq's default of
    # ever) and its session settings, as every other engine connection.
    driver = PostgresDriver(pg_dsn)
    try:
        await driver.open()
        await driver.queue_wait(queues=["pool"], timeout=0.01)
        conn = driver._listen_conns[asyncio.get_running_loop()]
        assert conn.info.get_parameters()["connect_timeout"] == str(DEFAULT_CONNECT_TIMEOUT)
        row = await (await conn.execute("select current_setting('timezone') as zone")).fetchone()
        assert row == {"zone": "UTC"}
    finally:
        await driver.close()


def _pool_tasks_left() -> list[str]:
    """The engine's pools' tasks (psycopg_pool names them after the pool, "jobs") still pending."""
    return [t.get_name() for t in asyncio.all_tasks() if t.get_name().startswith("jobs-") and not t.done()]


async def test_a_caller_cancelled_while_its_loops_pool_opens_leaves_no_pool_or_pool_task_behind(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A job aborted while the server had no connection slot to give: its statement was waiting
    # for the loop's first pool to open. A pool left to the collector is destroyed with its tasks
    # pending ("Task was destroyed but it is pending!" in a worker's log) and its connections open.
    cls = pool_module.AsyncConnectionPool
    real_open, real_close = cls.open, cls.close
    opening, closed = asyncio.Event(), asyncio.Event()
    pools: list[Any] = []

    async def stuck_open(self: Any, wait: bool = False, timeout: float = 30.0) -> None:
        pools.append(self)
        await real_open(self, wait=False)  # its tasks start, as a real open's do
        opening.set()
        await asyncio.Event().wait()  # no slot: the open waits on

    async def close(self: Any, timeout: float = 5.0) -> None:
        await real_close(self, timeout)
        closed.set()

    monkeypatch.setattr(cls, "open", stuck_open)
    monkeypatch.setattr(cls, "close", close)
    driver = PostgresDriver(pg_dsn)
    try:
        call = asyncio.create_task(driver.queue_notify(queues=["pool"]))
        await opening.wait()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await asyncio.wait_for(closed.wait(), timeout=10)
        [pool] = pools
        assert pool.closed
        assert _pool_tasks_left() == []
    finally:
        await driver.close()


async def test_a_driver_closed_right_after_its_connections_were_replaced_leaves_no_pool_task_behind(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The pool the server's goodbye retired closes in the background; a close of the driver
    # right then (a worker's drain) waits for it rather than cutting it short.
    cls = pool_module.AsyncConnectionPool
    real_close = cls.close

    async def slow_close(self: Any, timeout: float = 5.0) -> None:
        await asyncio.sleep(0.2)  # its workers still busy: a close takes a while
        await real_close(self, timeout)

    monkeypatch.setattr(cls, "close", slow_close)
    driver = PostgresDriver(pg_dsn)
    await driver.open()
    await _held(driver)
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(
            "select pg_terminate_backend(pid, 5000) from pg_stat_activity"
            " where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'"
        )
    await driver.open()  # finds its connections gone: the old pool is closing, a new one serves
    await driver.close()
    assert _pool_tasks_left() == []
