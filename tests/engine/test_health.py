"""A worker's probes (engine/runtime/health.py): /livez says whether its event loop turns, /readyz
whether it registered, is not draining and its database answers its heartbeats; both served on
the metrics port beside /metrics, 503 with one line saying why."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from engine.api import Engine
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.jobs import job
from engine.runtime.health import STALLED, Health
from engine.runtime.metrics import serve_metrics
from engine.runtime.worker import Worker
from tests.engine.probes import free_port, get, service

Q = "health-q"


@job(name="h.noop", queue=Q, idempotency_key=lambda inp: inp["k"])
async def noop(ctx, inp):  # type: ignore[no-untyped-def]
    return None


def test_readiness_follows_the_start_the_heartbeats_and_the_drain() -> None:
    clock = FakeClock()
    h = Health(clock, heartbeat_interval=5)
    assert h.ready() == (False, "starting: waiting for the database to answer")
    assert h.live()[0]  # waiting for the database is alive
    h.started = True
    h.beat()
    assert h.ready() == (True, "registered and heartbeating")
    clock.advance(14)
    h.turned_at = clock.monotonic()
    assert h.ready()[0]  # within three heartbeat intervals
    clock.advance(2)
    h.turned_at = clock.monotonic()
    h.beat_failed(ConnectionError("server closed the connection unexpectedly"))
    ok, why = h.ready()
    assert not ok and "has not answered its heartbeat for 16 s" in why and "server closed" in why
    h.beat()
    assert h.ready()[0]
    h.draining = True
    assert h.ready() == (False, "draining: it claims no more work") and h.live()[0]
    h.stopped = True
    assert h.ready() == (False, "stopped") and h.live() == (True, "stopped")


def test_a_loop_that_stops_turning_is_not_live_and_says_what_blocks_it() -> None:
    clock = FakeClock()
    h = Health(clock, heartbeat_interval=5)
    h.started = True
    clock.advance(STALLED)
    assert h.live()[0]
    clock.advance(1)
    ok, why = h.live()
    assert not ok and f"has not turned for {STALLED + 1:.0f} s" in why and "time.sleep" in why


@pytest.fixture
async def worker(driver: Driver, clock: FakeClock) -> AsyncIterator[Worker]:
    eng = Engine(driver, clock=clock, ids=IdFactory(clock, seed=3))
    w = eng.worker([noop], maintenance=False, relay=False)
    yield w
    await w.drain()


async def test_the_probes_are_served_beside_the_metrics_and_follow_the_worker(worker: Worker, clock: FakeClock) -> None:
    server = serve_metrics(worker.metrics, 0, health=worker.health)
    port = server.server_address[1]  # type: ignore[attr-defined]
    try:
        status, body = await asyncio.to_thread(get, port, "/readyz")
        assert (status, body) == (503, "starting: waiting for the database to answer\n")
        await worker.start()
        for path in ("/readyz", "/livez", "/healthz"):
            status, _ = await asyncio.to_thread(get, port, path)
            assert status == 200, path
        status, text = await asyncio.to_thread(get, port, "/metrics")
        assert status == 200 and "jobs_worker_slots_in_use" in text
        # The loop blocked (this test's thread waits in a plain call): no turn past STALLED seconds.
        clock.advance(STALLED + 5)
        status, body = get(port, "/livez")
        assert status == 503 and "the event loop has not turned" in body
        for _ in range(5):  # the loop turns again: the ticker, woken by the clock, notes it
            await asyncio.sleep(0)
        assert (await asyncio.to_thread(get, port, "/livez"))[0] == 200
        worker.stop_claiming()
        assert await asyncio.to_thread(get, port, "/readyz") == (503, "draining: it claims no more work\n")
    finally:
        server.shutdown()  # type: ignore[attr-defined]


def test_a_metrics_port_another_process_holds_is_refused_with_the_fix(pg_dsn: str) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    root = Path(__file__).resolve().parents[2]
    try:
        out = subprocess.run(
            [sys.executable, "-c", "from engine.cli import main; main()", "worker", "tests.engine.test_health"]
            + ["--dsn", pg_dsn, "--metrics-port", str(port)],
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root)},
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        taken.close()
    assert out.returncode == 1, out.stdout + out.stderr
    assert "X_INVALID_ARGUMENT" in out.stderr and f"127.0.0.1:{port} cannot be served" in out.stderr
    assert f"--metrics-port {port + 1}" in out.stderr


def test_jobs_worker_serves_its_probes_on_the_metrics_port(pg_dsn: str) -> None:
    port = free_port()
    with service(["worker", "tests.engine.test_health", "--dsn", pg_dsn, "--no-maintenance"], port) as line:
        assert "serving health-q" in line, line
        assert line.rstrip().endswith(f"; /metrics, /livez and /readyz on http://127.0.0.1:{port}")
        assert get(port, "/readyz") == (200, "registered and heartbeating\n")
        assert get(port, "/livez") == (200, "the event loop turns\n")
