"""`jobsctl scheduler --metrics-port` serves the scheduler's probes beside its metrics, as a
worker's and a relay's ports do: `/livez` (`/healthz`) while its loop turns, `/readyz` once its
start reached the database and while its ticks land, "stopped" once it stepped down; any other
path is 404."""

from __future__ import annotations

import asyncio
from typing import Any

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.runtime.health import STALLED
from engine.services.scheduler import Scheduler, SchedulerConfig, scheduler_health
from tests.engine import test_scheduler_app as app
from tests.engine.probes import free_port, get, service

READY = "scheduling: its database answers its ticks\n"


async def test_a_schedulers_readiness_follows_its_start_its_ticks_and_its_stop(
    driver: Driver, clock: FakeClock
) -> None:
    config = SchedulerConfig(interval=5.0, leader_lease=30.0)
    health = scheduler_health(config, clock)
    s = Scheduler(driver, clock, [app.every_second], holder="s-1", config=config, health=health)
    assert health.ready() == (False, "starting: waiting for the database to answer")
    await s.run_once()  # its first tick lands
    assert health.ready() == (True, READY.strip())
    clock.advance(3 * 5.0 + 1)
    ok, why = health.ready()
    assert not ok and why == "the database has not answered its ticks for 16 s"
    await s.run_once()
    assert health.ready() == (True, READY.strip())
    failed, own = asyncio.Event(), driver.leader_acquire

    async def refused(**kw: Any) -> Any:
        failed.set()
        raise ConnectionError("server closed the connection")

    driver.leader_acquire = refused  # type: ignore[method-assign]
    loop = asyncio.get_running_loop().create_task(s.run())
    try:
        await failed.wait()  # a tick failed: still ready until 3 intervals pass without one landing
        assert health.ready() == (True, READY.strip())
        clock.advance(3 * 5.0 + 1)
        ok, why = health.ready()
        assert not ok and why.endswith("for 16 s (ConnectionError: server closed the connection)")
    finally:
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
        driver.leader_acquire = own  # type: ignore[method-assign]
    clock.advance(STALLED)  # its ticker did not turn: the scheduler's loop is blocked
    ok, why = health.live()
    assert not ok and why.endswith(" s: a blocking call holds the scheduler's loop")
    await s.step_down()
    assert health.ready() == (False, "stopped")


def test_a_schedulers_readiness_window_is_three_of_its_intervals() -> None:
    clock = FakeClock()
    health = scheduler_health(SchedulerConfig(interval=20.0, leader_lease=60.0), clock)
    health.started = True
    health.beat()
    clock.advance(60)
    assert health.ready() == (True, READY.strip())
    clock.advance(1)
    assert not health.ready()[0]


def test_jobsctl_scheduler_serves_its_probes_and_its_metrics_and_404_elsewhere(pg_dsn: str) -> None:
    port = free_port()
    with service(["scheduler", "tests.engine.test_scheduler_app", "--dsn", pg_dsn], port) as line:
        assert line.startswith("jobsctl scheduler "), line
        assert line.rstrip().endswith(f"; /metrics, /livez and /readyz on http://127.0.0.1:{port}")
        assert get(port, "/readyz") == (200, READY)
        assert get(port, "/livez") == (200, "the event loop turns\n")
        assert get(port, "/healthz") == (200, "the event loop turns\n")
        status, text = get(port, "/metrics")
        assert status == 200 and "jobs_scheduler_leader_tick_age_seconds" in text
        assert get(port, "/nonexistent") == (
            404,
            "/nonexistent is not served here: /metrics, /livez, /healthz, /readyz\n",
        )
