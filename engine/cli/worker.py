"""`jobsctl worker MODULE[:ATTR]`: run a worker process for the jobs a module registers.

Everything is checked before the database is touched: the target imports and registers jobs,
every number is positive. SIGTERM or SIGINT drains (stop claiming, grace, release, flush); a
second signal exits at once.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import signal
import sys
from collections import Counter
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

import typer

from engine.cli import EXIT_ERROR, app, fail, say_error
from engine.cli.admin import (
    DSN_HELP,
    METRICS_HOST_HELP,
    long_running_driver,
    metrics_address,
    no_prepared_statements_option,
    served_metrics,
)
from engine.cli.worker_upkeep import check_lease, maintenance_config, positive
from engine.clock import SKEW_ENV, SystemClock, process_clock
from engine.errors import X_INVALID_ARGUMENT, X_WORKER_TARGET, JobsError
from engine.jobs import Registry
from engine.runtime import logs

if TYPE_CHECKING:
    from engine.drivers.base import Driver

EXIT_SECOND_SIGNAL = 130


def app_target(given: str | None, example: str) -> str:
    """The app module a command reads: ``--app``, else $JOBS_APP, else X_WORKER_TARGET naming
    ``example`` (the command as the user would type it) as the fix."""
    target = given or os.environ.get("JOBS_APP")
    if not target:
        raise JobsError(X_WORKER_TARGET, cause="no --app was given and $JOBS_APP is not set", fix=example)
    return target


WORKER_AGAIN = 'jobsctl worker {target} --dsn "$JOBS_DSN"'


def load_target(target: str, again: str = WORKER_AGAIN) -> Registry:
    """MODULE or MODULE:ATTR -> the registry of jobs it holds, or X_WORKER_TARGET with a fix.
    ``again``: the command being run, ``{target}`` where its module goes, so a fix that names a
    module says it in the command the person typed (`jobsctl describe --app {target}`, ...)."""
    from engine.runtime.worker import as_registry

    module_name, _, attr = target.partition(":")
    if not module_name:
        raise JobsError(
            X_WORKER_TARGET, cause=f"{target!r} names no module", fix=again.replace("{target}", "myapp.jobs")
        )
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # `jobsctl worker myapp.jobs` from the project's directory
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise JobsError(
                X_WORKER_TARGET,
                cause=f"no module named {module_name!r} on the path ({os.getcwd()})",
                fix=f"python -c 'import {module_name}'",
            ) from None
        raise JobsError(
            X_WORKER_TARGET,
            cause=f"module {module_name!r} failed to import: {exc}",
            fix=f"python -c 'import {module_name}'",
        ) from None
    except Exception as exc:
        raise JobsError(
            X_WORKER_TARGET,
            cause=f"module {module_name!r} raised on import: {type(exc).__name__}: {exc}",
            fix=f"python -c 'import {module_name}'",
        ) from None
    obj: Any = module
    if attr:
        if not hasattr(module, attr):
            raise JobsError(
                X_WORKER_TARGET,
                cause=f"module {module_name!r} has no attribute {attr!r}",
                fix=again.replace("{target}", module_name),
            )
        obj = getattr(module, attr)
    try:
        registry = as_registry(obj)
    except JobsError as err:
        raise JobsError(
            X_WORKER_TARGET, cause=f"{target!r}: {err.cause}", fix=again.replace("{target}", module_name)
        ) from None
    if len(registry) == 0:
        raise JobsError(
            X_WORKER_TARGET,
            cause=f"{target!r} registers no jobs (no @job handle in it)",
            fix=f"add @job(name=..., idempotency_key=...) to a handler in {module_name}",
        )
    return registry


def event_loop_runner(choice: str, target: str) -> Callable[[Coroutine[Any, Any, int]], int]:
    """asyncio.run, or uvloop.run: uvloop's loop runs a draining worker's Python ~25% faster
    (bench/README.md). ``auto`` takes uvloop when it is installed (it is a dependency off Windows)."""
    if choice not in ("auto", "uvloop", "asyncio"):
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"--loop {choice!r} is not one of auto, uvloop, asyncio",
            fix=f"jobsctl worker {target} --loop auto",
        )
    if choice != "asyncio":
        try:
            import uvloop
        except ImportError:
            if choice == "uvloop":
                raise JobsError(
                    X_INVALID_ARGUMENT,
                    cause="--loop uvloop was asked for and uvloop is not installed",
                    fix="pip install uvloop",
                ) from None
        else:
            return uvloop.run  # type: ignore[no-any-return]
    return asyncio.run


@app.command()
def worker(
    target: str = typer.Argument(..., help="MODULE or MODULE:ATTR holding the @job handles"),
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    queues: str = typer.Option(None, "--queues", help="comma-separated queues (default: every queue the jobs use)"),
    concurrency: int = typer.Option(10, "--concurrency", help="jobs running at once in this process"),
    batch_size: int = typer.Option(100, "--batch-size", help="most rows one claim takes"),
    ack_batch: int = typer.Option(200, "--ack-batch", help="completions per ack statement"),
    flush_interval: float = typer.Option(
        0.005, "--flush-interval", help="longest a completion waits for its ack batch (s)"
    ),
    lease_seconds: float = typer.Option(
        30.0, "--lease-seconds", help="a claim's lease (s, at least 1), renewed every third of it"
    ),
    grace: float = typer.Option(30.0, "--grace", help="drain timeout: in-flight jobs may finish for this long (s)"),
    close_timeout: float = typer.Option(
        10.0,
        "--close-timeout",
        help="drain: the most the close after the grace may take, whatever the database does (s)",
    ),
    start_timeout: float = typer.Option(
        None,
        "--start-timeout",
        help="give up starting after this long if the database does not answer (s; default: wait as long as it takes)",
    ),
    poll_interval: float = typer.Option(
        1.0, "--poll-interval", help="the fallback poll when no NOTIFY arrives (s): its claims' and its outbox relay's"
    ),
    traceback_limit: int = typer.Option(
        8192, "--traceback-limit", help="most characters of a failed attempt's traceback stored (its tail); 0: none"
    ),
    maintenance_interval: float = typer.Option(
        None, "--maintenance-interval", help="seconds between rescue/prune passes (5)", show_default=False
    ),
    no_maintenance: bool = typer.Option(False, "--no-maintenance", help="never lead the rescuer and pruner"),
    retention: float = typer.Option(
        None,
        "--retention",
        help="seconds completed and cancelled jobs are kept before the pruner deletes them (7 days; at most a quarter"
        " more: they go with their bucket)",
    ),
    dead_retention: float = typer.Option(
        None, "--dead-retention", help="seconds dead letters are kept (30 days; not shorter than --retention)"
    ),
    audit_retention: float = typer.Option(
        None, "--audit-retention", help="seconds the audit log's entries are kept (a year)", show_default=False
    ),
    reindex_interval: float = typer.Option(
        None,
        "--reindex-interval",
        help="seconds between the leader's checks of the GIN indexes over input (600); 0: never rebuild them",
    ),
    reindex_min_mb: float = typer.Option(
        None, "--reindex-min-mb", help="never rebuild a GIN index smaller than this many MiB (16)"
    ),
    vacuum_threshold: int = typer.Option(
        None,
        "--vacuum-threshold",
        help="dead row versions past which (plus 0.2 x its live rows) the leader vacuums a jobs table, "
        "e.g. 10000 (default 0: leave the tables to autovacuum)",
    ),
    no_relay: bool = typer.Option(False, "--no-relay", help="run no outbox relay in this worker"),
    no_scheduler: bool = typer.Option(False, "--no-scheduler", help="never lead the cron scheduler for its tasks"),
    metrics_port: int | None = typer.Option(
        None, "--metrics-port", help="serve Prometheus metrics on this port, and the probes /livez and /readyz"
    ),
    metrics_host: str | None = typer.Option(None, "--metrics-host", help=METRICS_HOST_HELP),
    loop: str = typer.Option("auto", "--loop", help="the event loop: auto (uvloop when installed), uvloop or asyncio"),
    no_prepared_statements: bool = no_prepared_statements_option(),
    burst: bool = typer.Option(
        False,
        "--burst",
        help="exit once nothing in its queues is due and every job it claimed has settled (a CI step, a one-off "
        "backlog)",
    ),
    tracing: bool = typer.Option(
        False,
        "--tracing",
        envvar="JOBS_TRACING",
        help="each run an OpenTelemetry span in the trace of the code that enqueued it (needs opentelemetry-api;"
        " the app's OpenTelemetry setup exports them)",
    ),
    json_out: bool = typer.Option(False, "--json", help="errors as JSON on stderr"),
) -> None:
    """Run a worker for the jobs MODULE[:ATTR] registers, until SIGTERM/SIGINT drains it.

    With --burst it drains and exits on its own once nothing in its queues is due."""
    try:
        runner = event_loop_runner(loop, target)
        for name, value, example in (
            ("concurrency", concurrency, "10"),
            ("batch-size", batch_size, "100"),
            ("ack-batch", ack_batch, "200"),
        ):
            positive(name, value, f"jobsctl worker {target}", example)
        for name, seconds, example in (
            ("flush-interval", flush_interval, "0.005"),
            ("lease-seconds", lease_seconds, "30"),
            ("grace", grace, "30"),
            ("close-timeout", close_timeout, "10"),
            ("start-timeout", start_timeout, "60"),
            ("poll-interval", poll_interval, "1"),
        ):
            positive(name, seconds, f"jobsctl worker {target}", example, duration=True)
        check_lease(lease_seconds, f"jobsctl worker {target}")
        port, host = metrics_address(metrics_port, metrics_host, f"jobsctl worker {target}")
        maint = maintenance_config(
            target,
            lease_seconds,
            off=no_maintenance,
            interval=maintenance_interval,
            retention=retention,
            dead_retention=dead_retention,
            audit_retention=audit_retention,
            reindex_interval=reindex_interval,
            reindex_min_mb=reindex_min_mb,
            vacuum_threshold=vacuum_threshold,
        )
        registry = load_target(target)
        from engine.runtime.worker_config import served_queues

        asked = tuple(q.strip() for q in queues.split(",") if q.strip()) if queues is not None else ()
        if queues is not None and not asked:  # left out, it would serve every queue instead
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"--queues {queues!r} names no queue",
                fix=f"jobsctl worker {target} --queues {','.join(registry.queues())}",
            )
        try:
            wanted = served_queues(asked, tuple(registry.queues()))  # the worker's own rule, checked now
        except JobsError as err:
            raise JobsError(
                err.code, cause=err.cause, fix=f"jobsctl worker {target} --queues {','.join(registry.queues())}"
            ) from None
        options: dict[str, Any] = dict(
            queues=wanted,
            concurrency=concurrency,
            batch_size=batch_size,
            ack_batch=ack_batch,
            flush_interval=flush_interval,
            lease_seconds=lease_seconds,
            grace=grace,
            close_timeout=close_timeout,
            start_timeout=start_timeout,
            poll_interval=poll_interval,
            traceback_limit=traceback_limit,
            burst=burst,
        )
        from engine.runtime.worker import WorkerConfig

        WorkerConfig(**options)  # every option checked before the database is touched
        if tracing:
            from engine.tracing import Tracing

            options["tracing"] = Tracing()  # refused here when opentelemetry-api is missing
        clock = process_clock()  # $JOBS_TEST_CLOCK_SKEW, for tests only
        driver = long_running_driver(
            dsn,
            no_prepared_statements=no_prepared_statements,
            command=f"jobsctl worker {target}",
            own_work=not no_scheduler and any(h.is_task for h in registry),  # its cron tasks' runs
        )
    except JobsError as err:
        fail(err, as_json=json_out)
    options["relay"] = not no_relay
    code = runner(
        _serve(
            driver,
            registry,
            options,
            maint,
            not no_maintenance,
            port,
            host,
            not no_scheduler,
            clock,
            json_out,
        )
    )
    if code:
        raise typer.Exit(code)


def _engine_on(driver: Driver, clock: SystemClock, tracing: Any = None) -> Any:
    """What a handler's ctx.engine answers in `jobsctl worker`: an engine on this process's driver,
    tracing as the worker does (--tracing), so what its handlers and steps enqueue carries their
    run's trace (engine.api is imported only when a handler first asks)."""
    from engine.api import Engine

    return Engine(driver, clock=clock, tracing=tracing)


async def _serve(
    driver: Driver,
    registry: Registry,
    options: dict[str, Any],
    maint: Any,
    maintenance: bool,
    metrics_port: int | None,
    metrics_host: str,
    scheduler: bool = True,
    clock: SystemClock | None = None,
    as_json: bool = False,
) -> int:
    from engine.runtime import aio
    from engine.runtime.logs import configure_json_logging
    from engine.runtime.metrics import Metrics
    from engine.services.maintenance import maintained_worker

    configure_json_logging()
    metrics = Metrics()
    clock = clock or SystemClock()
    if clock.skew:
        logs.emit(logs.WORKER_CLOCK_SKEWED, logging.WARNING, skew=clock.skew, env=SKEW_ENV, note="for tests only")
    ended: Counter[str] = Counter()  # --burst: what its runs came to, said as it exits
    w = maintained_worker(
        driver,
        registry,
        engine=lambda: _engine_on(driver, clock, options.get("tracing")),  # ctx.engine, made on first use
        clock=clock,
        maintenance=maintenance,
        maintenance_config=maint,
        scheduler=scheduler,
        metrics=metrics,
        on_execution=(lambda ex: ended.update((ex.outcome,))) if options.get("burst") else None,
        **options,
    )
    # Served before the start: the probes say "starting" while the database is awaited.
    server, served = served_metrics(metrics, metrics_port, metrics_host, as_json=as_json, health=w.health)
    if not served:
        await aio.within(driver.close, asyncio.get_running_loop().time() + w.config.close_timeout)
        return EXIT_ERROR
    loop = asyncio.get_running_loop()
    starting = loop.create_task(w.start())
    signals = 0
    stopping: list[asyncio.Task[Any]] = []

    def on_signal() -> None:
        nonlocal signals
        signals += 1
        if signals > 1:  # the operator means it: no second drain
            os._exit(EXIT_SECOND_SIGNAL)
        if starting.done():
            stopping.append(loop.create_task(w.drain()))
        else:  # still waiting for the database: nothing to drain; cancelled until the start ends
            stopping.append(aio.cancel_until_done(starting, loop.time() + w.config.close_timeout))

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal)
    try:
        try:
            await starting
        except asyncio.CancelledError:
            if not starting.cancelled():
                raise
            return 0
        except JobsError as err:
            say_error(err, as_json=as_json)
            return EXIT_ERROR
        if signals:  # signalled as the start ended (its cancellation lost on the way): drain now
            await w.drain()
            return 0
        where = "" if server is None else f"; /metrics, /livez and /readyz on http://{metrics_host}:{metrics_port}"
        print(
            f"jobsctl worker {w.id} serving {','.join(w.queues)} (concurrency {w.config.concurrency}){where}",
            flush=True,
        )
        began = loop.time()
        await w.wait_stopped()
        if w.config.burst:
            runs = ", ".join(f"{n} {outcome}" for outcome, n in sorted(ended.items())) or "no job was due"
            print(f"jobsctl worker {w.id} burst done in {loop.time() - began:.1f} s: {runs}", flush=True)
        return 0
    finally:
        if server is not None:
            server.shutdown()  # type: ignore[attr-defined]
        await aio.within(driver.close, loop.time() + w.config.close_timeout)  # bounded, whatever the database does
