"""The metrics port serves what it says and nothing else: `/metrics`, and the probes `/livez`
(`/healthz`) and `/readyz` of a process that has them (a worker, `jobsctl relay`); any other path
is 404. The relay's port answered every path with the metrics and 200, so a probe pointed at it
always passed; it now serves a relay's own probes, as a worker's port serves a worker's."""

from __future__ import annotations

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.runtime.health import STALLED
from engine.runtime.metrics import Metrics, serve_metrics
from engine.services.relay import Relay, RelayConfig, relay_health
from tests.engine.probes import free_port, get, service

READY = "publishing: its database answers its heartbeats\n"


def test_a_metrics_port_without_probes_serves_metrics_only_and_404_elsewhere() -> None:
    server = serve_metrics(Metrics(), 0)  # `jobsctl scheduler --metrics-port`: no probes
    port = server.server_address[1]  # type: ignore[attr-defined]
    try:
        status, text = get(port, "/metrics")
        assert status == 200 and "# TYPE jobs_total counter" in text
        for path in ("/", "/livez", "/readyz", "/nonexistent"):
            assert get(port, path) == (404, f"{path} is not served here: /metrics\n"), path
    finally:
        server.shutdown()  # type: ignore[attr-defined]


async def test_a_relays_readiness_follows_its_start_its_heartbeats_and_its_stop(
    driver: Driver, clock: FakeClock
) -> None:
    config = RelayConfig(heartbeat_interval=5.0, poll_interval=1.0)
    health = relay_health(config, clock)
    r = Relay(driver, clock, config=config, health=health)
    assert health.ready() == (False, "starting: waiting for the database to answer")
    await r.run_once()  # its first heartbeat lands
    assert health.ready() == (True, READY.strip())
    clock.advance(3 * 5.0 + 1)
    ok, why = health.ready()
    assert not ok and why.startswith("the database has not answered its heartbeat for 16 s")
    await r.run_once()
    assert health.ready() == (True, READY.strip())
    clock.advance(STALLED + 1)  # its ticker did not turn: the relay's loop is blocked
    ok, why = health.live()
    assert not ok and why.endswith(" s: a blocking call holds the relay's loop")
    await r.stop()
    assert health.ready() == (False, "stopped")


def test_a_relays_readiness_window_outlasts_a_poll_interval_longer_than_its_heartbeat() -> None:
    """An idle relay beats at its passes, one a poll interval: a long --poll-interval would read
    as a database that stopped answering."""
    health = relay_health(RelayConfig(heartbeat_interval=5.0, poll_interval=60.0), FakeClock())
    assert health.heartbeat_interval == 60.0


def test_jobsctl_relay_serves_its_probes_and_its_metrics_and_404_elsewhere(pg_dsn: str) -> None:
    port = free_port()
    with service(["relay", "--dsn", pg_dsn], port) as line:
        assert line.startswith("jobsctl relay "), line
        assert line.rstrip().endswith(f"; /metrics, /livez and /readyz on http://127.0.0.1:{port}")
        assert get(port, "/readyz") == (200, READY)
        assert get(port, "/livez") == (200, "the event loop turns\n")
        assert get(port, "/healthz") == (200, "the event loop turns\n")
        status, text = get(port, "/metrics")
        assert status == 200 and "outbox_published_total" in text
        assert get(port, "/nonexistent") == (
            404,
            "/nonexistent is not served here: /metrics, /livez, /healthz, /readyz\n",
        )
