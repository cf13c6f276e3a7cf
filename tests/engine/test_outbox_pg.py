"""The outbox on real PostgreSQL: the caller's own connection (sync and async, connection and
cursor), two relays over 10,000 rows, a relay SIGKILLed mid-batch, stage order, a real failed
publish, and the relay every worker runs."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from engine.api import Engine, Enqueue
from engine.clock import FakeClock, SystemClock
from engine.drivers.postgres import PostgresDriver
from engine.errors import JobsError
from engine.jobs import job
from engine.services.relay import Relay, RelayConfig

ROOT = Path(__file__).resolve().parents[2]


@job(name="confirm_order", queue="orders", idempotency_key=lambda inp: f"order:{inp['order']}")
async def confirm_order(ctx: Any, inp: Any) -> None:
    return None


def _count(dsn: str, sql: str, *args: Any) -> Any:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(sql, args).fetchone()  # type: ignore[arg-type]
        assert row is not None
        return row[0]


def test_i16_stage_writes_on_the_callers_connection_never_the_engines_pool(pg_dsn: str) -> None:
    eng = Engine(PostgresDriver(pg_dsn))
    try:
        with psycopg.connect(pg_dsn) as conn:
            with conn.transaction():
                s = eng.stage(conn, confirm_order, {"order": 1})
                assert _count(pg_dsn, "select count(*) from jobs.outbox") == 0  # not committed: invisible
                cur = conn.cursor()
                t = eng.stage(cur, confirm_order, {"order": 2})  # a cursor: the same transaction
            assert eng.driver.pools._pools == {}  # type: ignore[attr-defined]  # the engine never connected
        assert _count(pg_dsn, "select count(*) from jobs.outbox where id = any(%s)", [s.id, t.id]) == 2
    finally:
        eng.close()


def test_i16_a_refused_stage_leaves_the_callers_transaction_usable(pg_dsn: str) -> None:
    eng = Engine(PostgresDriver(pg_dsn))
    try:
        with psycopg.connect(pg_dsn) as conn:
            conn.execute("create table app_order (id int primary key)")
            conn.commit()
            with conn.transaction():
                for bad in ({"order": {1, 2}}, {"order": float("nan")}):
                    with pytest.raises(JobsError) as err:
                        eng.stage(conn, confirm_order, bad)
                    assert err.value.code == "X_INPUT_NOT_JSON"
                with pytest.raises(JobsError):
                    eng.stage(conn, confirm_order, {"order": 1}, delay=-1)
                with pytest.raises(JobsError):
                    eng.stage(conn, "confirm_order", {"order": 1})  # type: ignore[arg-type]
                conn.execute("insert into app_order values (42)")  # the caller's own work goes on
        assert _count(pg_dsn, "select count(*) from app_order where id = 42") == 1
        assert _count(pg_dsn, "select count(*) from jobs.outbox") == 0
    finally:
        eng.close()


def test_i16_an_aborted_or_async_connection_is_refused_before_any_statement(pg_dsn: str) -> None:
    eng = Engine(PostgresDriver(pg_dsn))
    try:
        with psycopg.connect(pg_dsn) as conn:
            with pytest.raises(psycopg.errors.UndefinedTable):
                conn.execute("select * from no_such_table")
            with pytest.raises(JobsError) as err:
                eng.stage(conn, confirm_order, {"order": 1})
            assert err.value.code == "X_INVALID_ARGUMENT" and "aborted" in err.value.cause
            conn.rollback()
        with pytest.raises(JobsError) as err:
            eng.stage(object(), confirm_order, {"order": 1})
        assert "psycopg" in err.value.cause
    finally:
        eng.close()


async def test_i16_astage_on_an_async_cursor_and_stage_refuses_an_async_connection(pg_dsn: str) -> None:
    eng = Engine(PostgresDriver(pg_dsn))
    async with await psycopg.AsyncConnection.connect(pg_dsn) as conn:
        async with conn.transaction():
            s = await eng.astage(conn.cursor(), confirm_order, {"order": 1})
            with pytest.raises(JobsError) as err:
                eng.stage(conn, confirm_order, {"order": 2})
            assert err.value.fix.startswith("await eng.astage")
    assert _count(pg_dsn, "select count(*) from jobs.outbox where id = %s", s.id) == 1
    await eng.aclose()


async def test_stage_order_is_kept_and_a_rolled_back_stage_is_never_published(pg_dsn: str) -> None:
    driver = PostgresDriver(pg_dsn)
    eng = Engine(driver)
    async with await psycopg.AsyncConnection.connect(pg_dsn) as conn:
        async with conn.transaction():
            kept = await eng.astage_many(conn, [Enqueue(confirm_order, {"order": n}) for n in range(50)])
        with pytest.raises(RuntimeError):
            async with conn.transaction():
                await eng.astage_many(conn, [Enqueue(confirm_order, {"order": n}) for n in range(50, 60)])
                raise RuntimeError("rolled back")
    r = Relay(driver, config=RelayConfig(batch_size=7, id="r1"))
    while (await r.run_once()).claimed:
        pass
    with psycopg.connect(pg_dsn) as c:
        got = c.execute(
            "select (j.input->>'order')::int from jobs.outbox o join jobs.job j on j.id = o.job_id order by j.id"
        ).fetchall()
        assert [g[0] for g in got] == list(range(50))  # publish order (job ids rise) is stage order
        assert c.execute("select count(*) from jobs.job").fetchone() == (50,)  # none of the rolled back
    assert len(kept) == 50
    await driver.close()


async def test_i20_a_real_failed_publish_keeps_its_error_and_no_later_row_overtakes_it(pg_dsn: str) -> None:
    driver = PostgresDriver(pg_dsn)
    eng = Engine(driver)
    async with await psycopg.AsyncConnection.connect(pg_dsn) as conn:
        async with conn.transaction():
            staged = await eng.astage_many(conn, [Enqueue(confirm_order, {"order": n}) for n in range(3)])
        # A row the queue refuses (max_attempts breaks jobs.job's check): a real statement failure.
        await conn.execute("update jobs.outbox set max_attempts = 0 where id = %s", [staged[0].id])
        await conn.commit()
    r = Relay(driver, config=RelayConfig(id="r1"))
    for attempt in (1, 2):
        res = await r.run_once()
        assert res.failed == staged[0].id and res.published == () and len(res.released) == 3
        assert "CheckViolation" in (res.error or "")
        row = await driver.outbox_get(id=staged[0].id)
        assert row is not None and row.attempts == attempt and row.claim_token is None
    assert _count(pg_dsn, "select count(*) from jobs.job") == 0  # rows 2 and 3 waited behind it
    with psycopg.connect(pg_dsn) as c:
        c.execute("update jobs.outbox set max_attempts = 1 where id = %s", [staged[0].id])
    res = await r.run_once()
    assert res.published == tuple(s.id for s in staged)
    await driver.close()


async def test_two_relays_polling_together_publish_10000_rows_each_exactly_once(pg_dsn: str) -> None:
    eng = Engine(PostgresDriver(pg_dsn))
    async with await psycopg.AsyncConnection.connect(pg_dsn) as conn:
        for start in range(0, 10_000, 2_500):
            async with conn.transaction():
                await eng.astage_many(conn, [Enqueue(confirm_order, {"order": n}) for n in range(start, start + 2_500)])
    drivers = [PostgresDriver(pg_dsn), PostgresDriver(pg_dsn)]
    relays = [Relay(d, config=RelayConfig(id=f"r{i}", batch_size=100)) for i, d in enumerate(drivers)]
    published: list[list[str]] = [[], []]

    async def drain(i: int) -> None:
        while res := await relays[i].run_once():
            if not res.claimed:
                return
            published[i] += res.published

    await asyncio.gather(drain(0), drain(1))
    assert len(published[0]) + len(published[1]) == 10_000
    assert not set(published[0]) & set(published[1]) and published[0] and published[1]  # both took part
    with psycopg.connect(pg_dsn) as c:
        assert c.execute("select count(*) from jobs.outbox where published_at is null").fetchone() == (0,)
        assert c.execute("select count(*), count(distinct idempotency_key) from jobs.job").fetchone() == (
            10_000,
            10_000,
        )
        assert c.execute("select count(distinct job_id) from jobs.outbox").fetchone() == (10_000,)
    for d in drivers:
        await d.close()
    await eng.aclose()


async def test_a_relay_sigkilled_mid_batch_has_its_rows_published_by_another_after_the_lease_once(
    pg_dsn: str, tmp_path: Path
) -> None:
    eng = Engine(PostgresDriver(pg_dsn))
    async with await psycopg.AsyncConnection.connect(pg_dsn) as conn:
        async with conn.transaction():
            staged = await eng.astage_many(conn, [Enqueue(confirm_order, {"order": n}) for n in range(120)])
    blocker = psycopg.connect(pg_dsn)
    blocker.execute("lock table jobs.job in share mode")  # the relay's publish waits here: mid-batch
    # The three-step pass (claim under a lease, publish, mark): the one-statement pass would block
    # on the lock before claiming anything, and a kill then leaves no row held at all.
    script = (
        "import asyncio, sys; from engine.drivers.postgres import PostgresDriver;"
        " from engine.services.relay import Relay, RelayConfig;"
        " cfg = RelayConfig(batch_size=50, lease_ms=3000, one_statement=False);"
        " asyncio.run(Relay(PostgresDriver(sys.argv[1]), config=cfg).run())"
    )
    cmd = [sys.executable, "-c", script, pg_dsn]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=(tmp_path / "relay.log").open("w")
    )
    try:
        deadline = time.monotonic() + 30
        while _count(pg_dsn, "select count(*) from jobs.outbox where claim_token is not null") < 50:
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "relay.log").read_text()
            await asyncio.sleep(0.05)  # a real process: its claim is only observable in the table
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
        blocker.rollback()
        blocker.close()
    dead = _count(pg_dsn, "select claimed_by from jobs.outbox where claim_token is not null limit 1")
    lease_end = _count(pg_dsn, "select max(lease_until) from jobs.outbox where claimed_by = %s", dead)
    driver = PostgresDriver(pg_dsn)
    clock = FakeClock(start=datetime.now(UTC))
    other = Relay(driver, clock, config=RelayConfig(id="survivor", batch_size=500))
    first = await other.run_once()
    assert set(first.published) == {s.id for s in staged[50:]}  # the dead relay's 50 are still leased
    clock.set(lease_end + timedelta(milliseconds=1))
    second = await other.run_once()
    assert second.published == tuple(s.id for s in staged[:50])  # after the lease, in stage order
    with psycopg.connect(pg_dsn) as c:
        assert c.execute("select count(*), count(distinct idempotency_key) from jobs.job").fetchone() == (120, 120)
        assert c.execute("select count(*) from jobs.outbox where published_at is null").fetchone() == (0,)
        assert c.execute("select count(distinct claimed_by) from jobs.outbox").fetchone() == (1,)  # all the survivor's
    await driver.close()
    await eng.aclose()


async def test_every_worker_runs_a_relay_by_default_and_its_drain_awaits_it(pg_dsn: str) -> None:
    ran = asyncio.Event()

    @job(name="pg_outbox_ping", queue="pings", idempotency_key=lambda inp: str(inp["n"]))
    async def ping(ctx: Any, inp: Any) -> None:
        ran.set()

    driver = PostgresDriver(pg_dsn)
    eng = Engine(driver, clock=SystemClock())
    async with eng.worker([ping], concurrency=2, maintenance=False, poll_interval=0.2) as w:
        assert w.relay is not None
        async with await psycopg.AsyncConnection.connect(pg_dsn) as conn:
            async with conn.transaction():
                await eng.astage(conn, ping, {"n": 1})
        await asyncio.wait_for(ran.wait(), 10)  # the NOTIFY woke the worker's relay, which published it
    assert w.relay._current is None or w.relay._current.done()
    async with eng.worker([ping], relay=False, maintenance=False) as w2:
        assert w2.relay is None
    await eng.aclose()


def test_jobs_outbox_cli_prints_the_backlog_and_why(pg_dsn: str) -> None:
    from typer.testing import CliRunner

    from engine.cli import app

    eng = Engine(PostgresDriver(pg_dsn))
    with psycopg.connect(pg_dsn) as conn, conn.transaction():
        s = eng.stage(conn, confirm_order, {"order": 1})
    eng.close()
    runner = CliRunner()
    out = runner.invoke(app, ["outbox", "--dsn", pg_dsn, "--json"])
    assert out.exit_code == 0, out.output
    assert '"backlog": 1' in out.output and '"relays": []' in out.output
    why = runner.invoke(app, ["outbox", "--dsn", pg_dsn, "--why", s.id])
    assert why.exit_code == 0 and "no relay is alive" in why.output
    missing = runner.invoke(app, ["outbox", "--dsn", pg_dsn, "--why", "0190a0e0-0000-7000-8000-000000000000"])
    assert missing.exit_code == 3
