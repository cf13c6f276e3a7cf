"""Workers on real Postgres: two workers (separate drivers and pools, or separate processes)
sharing one queue, a killed worker's job re-delivered, SIGTERM drains, the limit holds across
workers, and a server restart under a running worker loses nothing.

Waits are on the workers' execution callbacks, on a process's stdout, or on its exit; the only
sleeps are handlers simulating work.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from engine.api import Engine, Enqueue
from engine.drivers.postgres import PostgresDriver
from engine.jobs import JobDefinition, Registry, job
from engine.runtime.execute import Execution
from engine.runtime.worker import Worker, WorkerConfig
from engine.services.maintenance import MaintenanceConfig, maintained_worker
from engine.testing import EmbeddedPostgres
from engine.types import JobState
from tests.engine import test_worker_app as app

ROOT = Path(__file__).resolve().parents[2]
Q = app.QUEUE
ACTIVE = {"now": 0, "max": 0}
HELD: dict[str, asyncio.Event] = {}


@job(name="w.pg_limited", queue=Q, idempotency_key=lambda inp: str(inp["n"]), concurrency=2)
async def pg_limited(ctx, inp):  # type: ignore[no-untyped-def]
    ACTIVE["now"] += 1
    ACTIVE["max"] = max(ACTIVE["max"], ACTIVE["now"])
    try:
        await asyncio.sleep(0.02)  # simulated work, so that overlaps would show
    finally:
        ACTIVE["now"] -= 1
    return inp["n"]


@job(name="w.pg_held", queue=Q, idempotency_key=lambda inp: str(inp["n"]))
async def pg_held(ctx, inp):  # type: ignore[no-untyped-def]
    HELD.setdefault(f"started-{inp['n']}", asyncio.Event()).set()
    await HELD.setdefault("release", asyncio.Event()).wait()
    return inp["n"]


@job(name="w.pg_quick", queue=Q, idempotency_key=lambda inp: str(inp["n"]))
async def pg_quick(ctx, inp):  # type: ignore[no-untyped-def]
    return inp["n"]


class Seen:
    """Every execution of the workers of one test, and a way to await a count of them."""

    def __init__(self) -> None:
        self.all: list[tuple[str, Execution]] = []
        self._changed = asyncio.Event()

    def of(self, who: str) -> Any:
        def record(ex: Execution) -> None:
            self.all.append((who, ex))
            self._changed.set()

        return record

    def final(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for who, ex in self.all:
            if ex.outcome in ("completed", "dead"):
                out.setdefault(ex.job_id, []).append(who)
        return out

    async def until(self, done: Any, timeout: float = 30) -> None:
        async def loop() -> None:
            while not done():
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(loop(), timeout)  # a safety net, never the expected path


def config(**kw: Any) -> WorkerConfig:
    base: dict[str, Any] = dict(
        queues=(Q,), concurrency=4, lease_seconds=5.0, poll_interval=0.5, grace=5.0, shed_delay=0.05
    )
    base.update(kw)
    return WorkerConfig(**base)


@asynccontextmanager
async def workers(dsn: str, seen: Seen, *jobs: JobDefinition, n: int = 2, **kw: Any) -> AsyncIterator[list[Worker]]:
    async with AsyncExitStack() as stack:
        ws = []
        for i in range(n):
            d = PostgresDriver(dsn)
            stack.push_async_callback(d.close)
            w = Worker(d, Registry(jobs), config=config(id=f"w{i}", **kw), on_execution=seen.of(f"w{i}"))
            ws.append(await stack.enter_async_context(w))
        yield ws


async def test_two_workers_never_run_one_job_twice_while_its_lease_holds(pg_dsn: str) -> None:
    eng = Engine(PostgresDriver(pg_dsn))
    seen = Seen()
    try:
        async with workers(pg_dsn, seen, pg_quick, concurrency=8, batch_size=16):
            ids = [r.id for r in await eng.aenqueue_many([Enqueue(pg_quick, {"n": n}) for n in range(400)])]
            await seen.until(lambda: len(seen.final()) == 400)
        final = seen.final()
        assert sorted(final) == sorted(ids) and all(len(who) == 1 for who in final.values())
        for jid in ids[::40]:
            atts = await eng.driver.job_attempts(job_id=jid)
            assert [a.outcome for a in atts] == ["completed"]
    finally:
        await eng.aclose()


async def test_i8_the_concurrency_limit_holds_across_two_workers(pg_dsn: str) -> None:
    ACTIVE.update(now=0, max=0)
    eng = Engine(PostgresDriver(pg_dsn))
    seen = Seen()
    try:
        async with workers(pg_dsn, seen, pg_limited, concurrency=4):
            await eng.aenqueue_many([Enqueue(pg_limited, {"n": n}) for n in range(12)])
            await seen.until(lambda: len(seen.final()) == 12)
        assert ACTIVE["max"] == 2  # both workers had free slots; the fleet-wide limit held
        assert any(ex.outcome == "parked" for _, ex in seen.all)
    finally:
        await eng.aclose()


async def test_i12_a_slow_job_does_not_delay_the_others_on_postgres(pg_dsn: str) -> None:
    HELD.clear()
    eng = Engine(PostgresDriver(pg_dsn))
    seen = Seen()
    try:
        async with workers(pg_dsn, seen, pg_held, pg_quick, n=1, concurrency=2):
            held = await eng.aenqueue(pg_held, {"n": 0})
            await HELD.setdefault("started-0", asyncio.Event()).wait()
            quick = await eng.aenqueue_many([Enqueue(pg_quick, {"n": n}) for n in range(20)])
            await seen.until(lambda: len(seen.final()) == 20)
            assert held.id not in seen.final()
            HELD.setdefault("release", asyncio.Event()).set()
            await seen.until(lambda: len(seen.final()) == 21)
        assert {q.id for q in quick} <= set(seen.final())
    finally:
        await eng.aclose()


def _spawn(dsn: str, *args: str, env: dict[str, str] | None = None, log: Path) -> subprocess.Popen[str]:
    cmd = [
        sys.executable,
        "-c",
        "from engine.cli import main; main()",
        "worker",
        "tests.engine.test_worker_app",
        "--dsn",
        dsn,
        *args,
    ]
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.Popen(cmd, cwd=ROOT, env=full_env, stdout=subprocess.PIPE, stderr=log.open("w"), text=True)


async def _line(proc: subprocess.Popen[str], prefix: str) -> str:
    assert proc.stdout is not None
    while True:
        line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 30)
        if not line:
            raise AssertionError(f"the worker exited before printing {prefix!r}")
        if line.startswith(prefix):
            return line.strip()


async def test_a_sigkilled_workers_job_is_redelivered_after_its_lease_and_completed_by_the_other(
    pg_dsn: str, tmp_path: Path
) -> None:
    eng = Engine(PostgresDriver(pg_dsn))
    proc = _spawn(
        pg_dsn,
        "--lease-seconds",
        "1",
        "--concurrency",
        "1",
        "--no-maintenance",
        env={"JOBS_TEST_BLOCK": "1"},
        log=tmp_path / "killed.log",
    )
    try:
        r = await eng.aenqueue(app.pg_block, {"n": 1})
        started = await _line(proc, "STARTED ")
        assert started == f"STARTED {r.id}"
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        row = await eng.aget(r.id)
        assert row.state is JobState.RUNNING and row.claimed_by is not None
        seen = Seen()
        d = PostgresDriver(pg_dsn)
        w = maintained_worker(
            d,
            [app.pg_block],
            queues=[Q],
            lease_seconds=1.0,
            poll_interval=0.2,
            maintenance_config=MaintenanceConfig(interval=0.2, leader_lease=2.0),
            on_execution=seen.of("survivor"),
        )
        async with w:
            await seen.until(lambda: r.id in seen.final())
        await d.close()
        row = await eng.aget(r.id)
        assert (row.state, row.attempt, row.result["pid"]) == (JobState.COMPLETED, 2, os.getpid())  # type: ignore[index]
        atts = await eng.driver.job_attempts(job_id=r.id)
        assert [a.outcome for a in atts] == ["lost", "completed"]
        assert "lease_lost" in [h.kind for h in await eng.driver.job_history(job_id=r.id)]
    finally:
        if proc.poll() is None:
            proc.kill()
        await eng.aclose()


async def test_i14_sigterm_drains_without_losing_or_duplicating_a_job(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    eng = Engine(PostgresDriver(pg_dsn))
    proc = _spawn(pg_dsn, "--concurrency", "3", "--grace", "0.2", "--no-maintenance", log=tmp_path / "drained.log")
    try:
        specs = [Enqueue(app.pg_work, {"n": n, "seconds": 0.05 if n % 2 else 30}) for n in range(12)]
        ids = [r.id for r in await eng.aenqueue_many(specs)]
        await _line(proc, "jobsctl worker ")
        for _ in range(3):
            await _line(proc, "STARTED ")
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(proc.wait, 30) == 0
        rows = [await eng.aget(j) for j in ids]
        assert {r.state for r in rows} <= {JobState.COMPLETED, JobState.READY}
        assert any(r.state is JobState.READY for r in rows)  # the 30 s jobs were released at the deadline
        released = [r for r in rows if r.state is JobState.READY and r.claimed_by is not None]
        assert released and all(r.attempt == 0 for r in released)  # a release burns no attempt
        assert await eng.driver.worker_list(now=eng.clock.now()) == []  # deregistered
        # Another worker picks the rest up; every job ends completed exactly once.
        monkeypatch.setenv("JOBS_TEST_FAST", "1")
        left = {r.id for r in rows if r.state is JobState.READY}
        seen = Seen()
        async with workers(pg_dsn, seen, app.pg_work, n=1, concurrency=12):
            await seen.until(lambda: left <= set(seen.final()))
        for jid in ids:
            outcomes = Counter(a.outcome for a in await eng.driver.job_attempts(job_id=jid))
            assert outcomes["completed"] == 1
    finally:
        if proc.poll() is None:
            proc.kill()
        await eng.aclose()


async def test_a_server_restart_under_a_running_worker_loses_no_job(pg_dsn: str, pg_cluster: EmbeddedPostgres) -> None:
    HELD.clear()
    seen = Seen()
    d = PostgresDriver(pg_dsn)
    w = Worker(
        d,
        Registry([pg_held, pg_quick]),
        config=config(concurrency=4, lease_seconds=30.0, poll_interval=0.2),
        on_execution=seen.of("w"),
    )
    eng = Engine(PostgresDriver(pg_dsn))
    try:
        async with w:
            held = [r.id for r in await eng.aenqueue_many([Enqueue(pg_held, {"n": n}) for n in range(2)])]
            for n in range(2):
                await HELD.setdefault(f"started-{n}", asyncio.Event()).wait()
            await asyncio.to_thread(pg_cluster.restart)
            HELD.setdefault("release", asyncio.Event()).set()  # they finish while the pools reconnect
            # The app's own pool lost its connections too (that is the app's to retry): a new one.
            await eng.aclose()
            eng = Engine(PostgresDriver(pg_dsn))
            after = [r.id for r in await eng.aenqueue_many([Enqueue(pg_quick, {"n": n}) for n in range(10)])]
            await seen.until(lambda: set(held + after) <= set(seen.final()))
        for jid in held + after:
            row = await eng.aget(jid)
            assert row.state is JobState.COMPLETED and row.attempt == 1
        assert all(len(who) == 1 for who in seen.final().values())
        assert (w.metrics.registry.get_sample_value("jobs_worker_reconnects_total", {"what": "claim"}) or 0) + (
            w.metrics.registry.get_sample_value("jobs_worker_reconnects_total", {"what": "listen"}) or 0
        ) >= 1
    finally:
        await d.close()
        await eng.aclose()


@pytest.fixture(autouse=True)
def _fresh_module_state() -> None:
    HELD.clear()
