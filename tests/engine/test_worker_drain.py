"""A drain ends within its grace plus a bounded close, whatever the database does (I14).

Two faults, each reproduced on purpose rather than by luck:
- a cancellation lost inside the pool's connection checkout, which then returns normally (what
  psycopg_pool's ``asyncio.wait_for`` does on Python 3.11 when a connection is handed over in the
  same turn as the cancellation): the checkout here waits until it is cancelled and then goes on;
- the server stopped during the drain of a `jobsctl worker` process (SIGTERM).
"""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from engine.api import Engine, connect
from engine.drivers.postgres import PostgresDriver
from engine.drivers.postgres import pool as pg_pool
from engine.jobs import job
from engine.runtime import aio
from engine.services.maintenance import MaintenanceConfig
from engine.testing import EmbeddedPostgres
from tests.engine import test_worker_app as app
from tests.engine.test_worker_pg import _line, _spawn

Q = "drain-q"


@job(name="drain.quick", queue=Q, idempotency_key=lambda inp: str(inp["n"]))
async def quick(ctx, inp):  # type: ignore[no-untyped-def]
    return inp["n"]


class LostCancellation:
    """Armed, the next checkout made by a task named ``victim`` waits until it is cancelled, then
    swallows the cancellation and hands the connection over as if nothing happened."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, victim: str) -> None:
        self.victim, self.armed, self.inside, self.swallowed = victim, False, asyncio.Event(), 0
        original = pg_pool._Use.__aenter__
        trap = self

        async def checkout(use: Any) -> Any:
            task = asyncio.current_task()
            if trap.armed and task is not None and task.get_name() == trap.victim:
                trap.armed = False
                trap.inside.set()
                try:
                    await asyncio.Event().wait()
                except asyncio.CancelledError:
                    trap.swallowed += 1
            return await original(use)

        monkeypatch.setattr(pg_pool._Use, "__aenter__", checkout)


async def test_i14_a_drain_ends_when_a_loops_cancellation_is_lost_in_a_connection_checkout(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    trap = LostCancellation(monkeypatch, victim="jobs-service")  # the maintenance loop
    eng = connect(pg_dsn)
    grace, close_timeout = 0.2, 1.0
    w = eng.worker(
        [quick],
        queues=[Q],
        relay=False,
        grace=grace,
        close_timeout=close_timeout,
        maintenance_config=MaintenanceConfig(interval=0.02, leader_lease=5.0),
    )
    try:
        async with asyncio.timeout(30):  # a safety net: the hang this test pins would never end
            async with w:
                await eng.aenqueue(quick, {"n": 1})
                trap.armed = True
                await trap.inside.wait()
                began = time.monotonic()  # leaving the block drains
            took = time.monotonic() - began
        assert trap.swallowed == 1
        assert took < grace + close_timeout + 1.0, f"the drain took {took:.2f} s"
        assert all(t.done() for t in w._tasks)
    finally:
        await eng.aclose()


async def test_i14_a_sigterm_drain_ends_in_bounded_time_when_the_server_stops_during_it(
    pg_dsn: str, pg_cluster: EmbeddedPostgres, tmp_path: Path
) -> None:
    grace, close_timeout = 0.5, 2.0
    proc = _spawn(
        pg_dsn,
        "--concurrency",
        "2",
        "--grace",
        str(grace),
        "--close-timeout",
        str(close_timeout),
        "--maintenance-interval",
        "0.2",
        log=tmp_path / "worker.log",
    )
    eng = Engine(PostgresDriver(pg_dsn))
    try:
        await _line(proc, "jobsctl worker ")
        await eng.aenqueue(app.pg_work, {"n": 1, "seconds": 3})
        await _line(proc, "STARTED ")
        await eng.aclose()
        await asyncio.to_thread(pg_cluster.stop)
        began = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(proc.wait, 60)  # a safety net; the bound is asserted below
        took = time.monotonic() - began
        log = (tmp_path / "worker.log").read_text()
        assert code == 0, log
        assert took < grace + close_timeout + 3.0, f"the drain took {took:.2f} s\n{log}"
        assert "Traceback" not in log, log
    finally:
        if proc.poll() is None:
            proc.kill()
        if not pg_cluster.running:
            await asyncio.to_thread(pg_cluster.start)
        await eng.aclose()


async def test_a_start_signalled_while_its_cancellation_is_lost_in_a_checkout_still_ends() -> None:
    """What a SIGTERM during a start does (`jobsctl worker`, `jobsctl relay`, `jobsctl scheduler`): the
    start is cancelled again until it ends, so a cancellation lost in a pool checkout does not
    leave it waiting for the database (a retry's backoff) for its whole start timeout."""
    inside, swallowed = asyncio.Event(), 0

    async def start() -> None:
        nonlocal swallowed
        inside.set()
        try:
            await asyncio.Event().wait()  # a checkout that loses the first cancellation
        except asyncio.CancelledError:
            swallowed += 1
        await asyncio.Event().wait()  # then a retry's backoff: ends only when cancelled again

    loop = asyncio.get_running_loop()
    task = loop.create_task(start())
    await inside.wait()
    stopper = aio.cancel_until_done(task, loop.time() + 5.0)
    async with asyncio.timeout(5):  # a safety net: the hang this test pins would never end
        with pytest.raises(asyncio.CancelledError):
            await task
    assert swallowed == 1 and task.cancelled()
    assert await stopper == []  # nothing left running at its deadline
