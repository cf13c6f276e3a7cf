"""`jobsctl outbox` (the backlog, live claims, failing rows, relays; `--why ID` for one staged row) and
`jobsctl relay` (the outbox relay alone, until SIGTERM/SIGINT stops it after the pass under way)."""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Any

import typer

from engine.cli import EXIT_ERROR, app, fail
from engine.cli.admin import (
    DSN_HELP,
    JSON_HELP,
    METRICS_HOST_HELP,
    START_HELP,
    check_start_timeout,
    config_from_flags,
    long_running_driver,
    metrics_address,
    no_prepared_statements_option,
    served_metrics,
    start_when_reachable,
)
from engine.cli.reads import _t, console, emit, run, table
from engine.durations import duration
from engine.errors import X_INVALID_ARGUMENT, JobsError

EXIT_SECOND_SIGNAL = 130


@app.command()
def outbox(
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    why: str = typer.Option(None, "--why", help="an outbox row id: why it is not published yet"),
    limit: int = typer.Option(None, "--limit", help="claims and failing rows shown (1 to 500; default 20)"),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """The outbox: backlog and its oldest row, claims held by relays, failing rows, relays alive."""
    from engine.introspect.base import EngineView
    from engine.introspect.outbox import outbox_view, outbox_why

    if why is not None:  # an empty --why is outbox_why's malformed id, never the overview
        if limit is not None:
            cause = "--limit bounds the overview's claims and failing rows; --why answers for one row"
            fail(JobsError(X_INVALID_ARGUMENT, cause=cause, fix=f"jobsctl outbox --why {why}"), as_json=json_out)
        answer = run(dsn, json_out, lambda e: outbox_why(EngineView(e), why))
        if json_out:
            return emit(answer)
        from rich.text import Text  # relay ids (host names) and errors are data: never markup or emoji codes

        console().print(Text(f"{answer.id} [{answer.status}] {answer.text}"))
        return None
    view = run(dsn, json_out, lambda e: outbox_view(EngineView(e), limit=20 if limit is None else limit))
    if json_out:
        return emit(view)
    from rich.text import Text

    out = console()
    backlog = f"{'≥' if view.backlog_capped else ''}{view.backlog}"
    age = "-" if view.oldest_unpublished_age is None else duration(view.oldest_unpublished_age)
    published = f"{'≥' if view.published_capped else ''}{view.published_last_hour}"
    out.print(f"backlog {backlog}  oldest unpublished {age}  published/1h {published}")
    out.print(Text("relays alive: " + (", ".join(r.id for r in view.relays) or "none")))
    if view.holders:
        t = table("relay", "rows", "lease until", "oldest staged")
        for h in view.holders:
            t.add_row(Text(h.relay), str(h.rows), _t(h.lease_until), _t(h.oldest_staged_at))
        out.print(t)
    if view.failing:
        t = table("id", "job", "attempts", "last failed", "last error")
        for r in view.failing:
            t.add_row(r.id, Text(r.name), str(r.attempts), _t(r.failed_at), Text(r.last_error or ""))
        out.print(t)
    return None


@app.command()
def relay(
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    batch_size: int = typer.Option(250, "--batch-size", help="most rows one claim takes"),
    lease_ms: int = typer.Option(
        30_000, "--lease-ms", help="a claim's lease (ms, at least 1000): another relay takes the rows after it"
    ),
    poll_interval: float = typer.Option(1.0, "--poll-interval", help="the fallback poll when no NOTIFY arrives (s)"),
    metrics_port: int | None = typer.Option(None, "--metrics-port", help="serve Prometheus metrics on this port"),
    metrics_host: str | None = typer.Option(None, "--metrics-host", help=METRICS_HOST_HELP),
    start_timeout: float = typer.Option(None, "--start-timeout", help=START_HELP),
    no_prepared_statements: bool = no_prepared_statements_option(),
    json_out: bool = typer.Option(False, "--json", help="errors as JSON on stderr"),
) -> None:
    """Run the outbox relay alone (every `jobsctl worker` runs one too, unless --no-relay)."""
    from engine.services.relay import MIN_LEASE_MS, RelayConfig

    try:
        port, host = metrics_address(metrics_port, metrics_host, "jobsctl relay")
        if lease_ms < 1:  # RelayConfig's invariant (I19) words this in the Python API's terms; a short one, the flag's
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"--lease-ms {lease_ms} must be a whole number of milliseconds >= {MIN_LEASE_MS}",
                fix="jobsctl relay --lease-ms 30000",
            )
        config = config_from_flags(
            RelayConfig,
            "jobsctl relay",
            {"batch_size": "--batch-size", "lease_ms": "--lease-ms", "poll_interval": "--poll-interval"},
            batch_size=batch_size,
            lease_ms=lease_ms,
            poll_interval=poll_interval,
        )
        check_start_timeout(start_timeout, "jobsctl relay")
        driver = long_running_driver(dsn, no_prepared_statements=no_prepared_statements, command="jobsctl relay")
    except JobsError as err:
        fail(err, as_json=json_out)
    code = asyncio.run(_serve(driver, config, port, host, start_timeout, json_out))
    if code:
        raise typer.Exit(code)


async def _serve(
    driver: Any,
    config: Any,
    metrics_port: int | None,
    metrics_host: str,
    start_timeout: float | None,
    as_json: bool = False,
) -> int:
    from engine.clock import SystemClock
    from engine.runtime.logs import configure_json_logging
    from engine.runtime.metrics import Metrics
    from engine.services.relay import Relay, relay_health

    configure_json_logging()
    metrics, clock = Metrics(), SystemClock()
    health = relay_health(config, clock)
    r = Relay(driver, clock, config=config, metrics=metrics, health=health)
    ticker = asyncio.ensure_future(health.tick())  # /livez: the loop turns
    server = None
    try:
        # Served before the start, as a worker's: the probes say "starting" while the database is awaited.
        server, served = served_metrics(metrics, metrics_port, metrics_host, as_json=as_json, health=health)
        if not served:
            return EXIT_ERROR
        started = await start_when_reachable(driver, r.id, start_timeout, as_json=as_json)
        if started is not None:
            return started
        health.started = True  # its start reached the database; its passes' heartbeats keep it ready
        health.beat()
        loop = asyncio.get_running_loop()
        signals = 0

        def on_signal() -> None:
            nonlocal signals
            signals += 1
            if signals > 1:
                os._exit(EXIT_SECOND_SIGNAL)
            loop.create_task(r.stop())

        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, on_signal)
        where = "" if server is None else f"; /metrics, /livez and /readyz on http://{metrics_host}:{metrics_port}"
        print(f"jobsctl relay {r.id} (batch {config.batch_size}, lease {config.lease_ms} ms){where}", flush=True)
        await r.run()
        await r.stop()
        return 0
    finally:
        ticker.cancel()
        if server is not None:
            server.shutdown()  # type: ignore[attr-defined]
        await driver.close()
