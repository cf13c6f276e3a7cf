"""A lost connection reaches the runtime as one engine error, ConnectionLost, whatever the driver:
the Postgres driver translates its own connection failures, and the worker retries a settle that
raised it (the runtime imports no driver's error classes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

from engine.api import Engine
from engine.clock import FakeClock
from engine.drivers.memory import MemoryDriver
from engine.drivers.postgres import PostgresDriver
from engine.errors import X_DB_UNREACHABLE, ConnectionLost, JobsError
from engine.ids import IdFactory
from engine.jobs import job
from engine.types import JobState
from tests.engine.test_worker import Q, next_of, running


@job(name="lost.ok", queue=Q, idempotency_key=lambda inp: str(inp["n"]))
async def lost_ok(ctx, inp):  # type: ignore[no-untyped-def]
    return {"n": inp["n"]}


async def test_the_postgres_driver_raises_a_broken_connection_as_connection_lost(pg_dsn: str) -> None:
    driver = PostgresDriver(pg_dsn)
    await driver.open()
    try:
        with pytest.raises(ConnectionLost) as err:  # the session ends under its statement
            async with driver._connection() as conn:
                await conn.execute("select pg_terminate_backend(pg_backend_pid()), pg_sleep(5)")
        assert isinstance(err.value, JobsError) and err.value.code == X_DB_UNREACHABLE
        assert isinstance(err.value.__cause__, psycopg.OperationalError)
        assert "connection" in err.value.cause
    finally:
        await driver.close()


async def test_a_statement_the_server_rolled_back_is_retried_alike_but_said_as_a_rollback(pg_dsn: str) -> None:
    driver = PostgresDriver(pg_dsn)
    await driver.open()
    try:
        with pytest.raises(ConnectionLost) as err:
            async with driver._connection() as conn:
                await conn.execute(
                    "do $$ begin raise exception 'could not serialize access' using errcode = '40001'; end $$"
                )
        assert (
            err.value.cause == "the database rolled the statement back (could not serialize access); it may be repeated"
        )
    finally:
        await driver.close()


async def test_i6_an_ack_that_lost_its_connection_is_retried_and_lands(clock: FakeClock) -> None:
    mem = MemoryDriver()
    eng = Engine(mem, clock=clock, ids=IdFactory(clock, seed=11))
    real_ack = mem.job_ack_many
    calls = 0

    async def flaky_ack(**kw: Any) -> list[str]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ConnectionLost("the connection to the database failed: server closed the connection")
        return await real_ack(**kw)

    mem.job_ack_many = flaky_ack  # type: ignore[method-assign]
    async with running(mem, clock, lost_ok) as (w, seen):
        r = await eng.aenqueue(lost_ok, {"n": 1})
        assert (await next_of(seen)).outcome == "completed"
    assert calls == 2
    assert w.metrics.registry.get_sample_value("jobs_worker_reconnects_total", {"what": "ack"}) == 1.0
    assert (await eng.aget(r.id)).state is JobState.COMPLETED


async def test_a_connection_that_cannot_be_opened_is_connection_lost_too(tmp_path: Path) -> None:
    # A settle retries ConnectionLost while its lease holds: a pool reopened during a restart
    # must fail the same way as a connection that broke, not as another error.
    driver = PostgresDriver(f"host={tmp_path} dbname=postgres connect_timeout=2")
    try:
        with pytest.raises(ConnectionLost) as err:
            await driver.job_get(job_id="00000000-0000-0000-0000-000000000000")
        assert (
            err.value.code == X_DB_UNREACHABLE
            and f"could not connect to database postgres on {tmp_path}" in err.value.cause
        )
    finally:
        await driver.close()
