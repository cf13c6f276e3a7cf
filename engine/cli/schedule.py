"""`jobsctl schedule [--json]`, `jobsctl schedule pause|resume|trigger NAME`, and `jobsctl scheduler MODULE`:
the cron tasks as the fleet stores them, their operator actions, and the scheduler run alone."""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
from typing import Any

import typer

from engine.cli import EXIT_ERROR, app, fail
from engine.cli.acting import ACTOR_HELP, EXIT_NOOP
from engine.cli.admin import (
    DSN_HELP,
    JSON_HELP,
    METRICS_HOST_HELP,
    NOTE_HELP,
    START_HELP,
    check_start_timeout,
    config_from_flags,
    group_given,
    long_running_driver,
    metrics_address,
    no_prepared_statements_option,
    served_metrics,
    start_when_reachable,
)
from engine.cli.read_only import STATE as READ_ONLY
from engine.cli.reads import console, emit, run
from engine.durations import relative
from engine.errors import X_INVALID_ARGUMENT, JobsError

schedule_app = typer.Typer(
    name="schedule", help="Cron tasks: list them, pause, resume, trigger.", no_args_is_help=False
)
app.add_typer(schedule_app, name="schedule")


def _schedules(eng: Any, actor: str | None = None, *, acting: bool = True, verb: str = "pause", name: str = "") -> Any:
    """The schedules' view and actions; acting as ``actor``, a refused note's fix names the
    ``verb`` command's --note."""
    from engine.actions.base import default_actor
    from engine.introspect.schedules import Schedules

    note_fix = f"jobsctl schedule {verb} {shlex.quote(name)} --note 'why, in plain text'"
    who = (actor or default_actor()) if acting else None
    return Schedules(eng, actor=who, note_fix=note_fix, read_only=READ_ONLY.on)  # the command refused first


def _when(value: Any) -> str:
    return "-" if value is None else value.strftime("%Y-%m-%d %H:%M:%SZ")


@schedule_app.callback(invoke_without_command=True)
def schedule(
    ctx: typer.Context,
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Every declared task: cron (in words), zone, next and last occurrence, the last job's state,
    occurrences skipped by catch-up, pause; and the scheduler's leader."""
    if ctx.invoked_subcommand is not None:
        return
    view = run(dsn, json_out, lambda e: _schedules(e, acting=False).view())
    if json_out:
        emit(view.as_dict())
        return
    from rich.table import Table

    out = console()
    if not view.tasks:
        out.print("no cron task is declared: `jobsctl worker MODULE` declares the @task handlers MODULE holds")
    table = Table("task", "cron", "zone", "catch-up", "next", "last", "last job", "skipped", "status")
    for t in view.tasks:
        catch = t.catch_up + (f" ({t.max_catch_up})" if t.max_catch_up else "")
        status = (
            f"paused by {t.paused_by}"
            if t.paused
            else f"RETIRED: undeclared since {_when(t.seen_at)}"
            if t.retired
            else "on"
        )
        table.add_row(
            t.name,
            f"{t.cron}  {t.words}",
            t.timezone,
            catch,
            _when(t.next_at),
            _when(t.last_at),
            t.last_job_state or "-",
            str(t.skipped),
            status,
        )
    if view.tasks:
        out.print(table)
    if any(t.retired for t in view.tasks):
        out.print("RETIRED: no scheduler process has declared the task for 10 minutes (removed from the code, or no")
        out.print("  scheduler runs); none of its occurrences is enqueued until a process that declares it starts")
    lead = view.leader
    if lead is None:
        out.print("leader: none has ever led")
    else:
        state = "leads" if lead.live else "LAPSED"
        age = "never ticked" if lead.tick_age is None else f"last tick {relative(-lead.tick_age)}"
        where = f"{lead.host or '?'} pid {lead.pid or '?'}"
        out.print(f"leader: {lead.holder} ({where}) term {lead.term} {state} until {_when(lead.lease_until)}, {age}")


def _pause(name: str, paused: bool, note: str | None, actor: str | None, dsn: str | None, json_out: bool) -> None:
    async def call(e: Any) -> Any:
        s = _schedules(e, actor, verb="pause" if paused else "resume", name=name)
        return await (s.pause(name, note=note) if paused else s.resume(name, note=note))

    p = run(dsn, json_out, call)
    if json_out:
        emit(p)
    else:
        console().print(f"task {p.task}: {'paused' if p.paused else 'running'}" + ("" if p.changed else " (already)"))
    if not p.changed:
        raise typer.Exit(EXIT_NOOP)


@schedule_app.command("pause")
def pause(
    ctx: typer.Context,
    name: str = typer.Argument(...),
    note: str = typer.Option(None, "--note", help=NOTE_HELP),
    actor: str = typer.Option(None, "--actor", help=ACTOR_HELP),
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Pause a task: durable, audited; no occurrence is enqueued until it is resumed, and those due meanwhile are skipped."""
    _pause(name, True, note, actor, *group_given(ctx, dsn, json_out))


@schedule_app.command("resume")
def resume(
    ctx: typer.Context,
    name: str = typer.Argument(...),
    note: str = typer.Option(None, "--note", help=NOTE_HELP),
    actor: str = typer.Option(None, "--actor", help=ACTOR_HELP),
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Resume a paused task; what fell due while it was paused is not owed."""
    _pause(name, False, note, actor, *group_given(ctx, dsn, json_out))


@schedule_app.command("trigger")
def trigger(
    ctx: typer.Context,
    name: str = typer.Argument(...),
    note: str = typer.Option(None, "--note", help=NOTE_HELP),
    actor: str = typer.Option(None, "--actor", help=ACTOR_HELP),
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Enqueue an occurrence of a task now, under its own idempotency key (audited on the job)."""
    given, json_out = group_given(ctx, dsn, json_out)
    job_id = run(given, json_out, lambda e: _schedules(e, actor, verb="trigger", name=name).trigger(name, note=note))
    if json_out:
        emit({"task": name, "job_id": job_id})
    else:
        console().print(f"task {name}: triggered as job {job_id}")


@app.command()
def scheduler(
    target: str = typer.Argument(..., help="MODULE or MODULE:ATTR holding the @task handles"),
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    interval: float = typer.Option(5.0, "--interval", help="the longest between two ticks (s)"),
    lease_seconds: float = typer.Option(30.0, "--lease-seconds", help="the leader's lease (s)"),
    metrics_port: int | None = typer.Option(
        None, "--metrics-port", help="serve Prometheus metrics and the probes /livez, /readyz on this port"
    ),
    metrics_host: str | None = typer.Option(None, "--metrics-host", help=METRICS_HOST_HELP),
    start_timeout: float = typer.Option(None, "--start-timeout", help=START_HELP),
    no_prepared_statements: bool = no_prepared_statements_option(),
    json_out: bool = typer.Option(False, "--json", help="errors as JSON on stderr"),
) -> None:
    """Run the cron scheduler alone (it enqueues; workers run the jobs) until SIGTERM/SIGINT."""
    from engine.cli.worker import load_target
    from engine.services.scheduler import SchedulerConfig
    from engine.tasks import tasks_of

    try:
        port, host = metrics_address(metrics_port, metrics_host, f"jobsctl scheduler {target}")
        config = config_from_flags(
            SchedulerConfig,
            f"jobsctl scheduler {target}",
            {"interval": "--interval", "leader_lease": "--lease-seconds"},
            interval=interval,
            leader_lease=lease_seconds,
        )
        tasks = tasks_of(load_target(target, "jobsctl scheduler {target}"))
        if not tasks:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"{target!r} declares no cron task (no @task handle in it)",
                fix=f"add @task(name=..., cron='*/5 * * * *') to a handler in {target.partition(':')[0]}",
            )
        check_start_timeout(start_timeout, f"jobsctl scheduler {target}")
        driver = long_running_driver(
            dsn, no_prepared_statements=no_prepared_statements, command=f"jobsctl scheduler {target}"
        )
    except JobsError as err:
        fail(err, as_json=json_out)
    code = asyncio.run(_serve(driver, tasks, config, port, host, start_timeout, json_out))
    if code:
        raise typer.Exit(code)


async def _serve(
    driver: Any,
    tasks: list[Any],
    config: Any,
    metrics_port: int | None,
    metrics_host: str,
    start_timeout: float | None,
    as_json: bool = False,
) -> int:
    from engine.clock import SystemClock
    from engine.runtime.logs import configure_json_logging
    from engine.runtime.metrics import Metrics
    from engine.services.scheduler import Scheduler, scheduler_health

    configure_json_logging()
    metrics, clock = Metrics(), SystemClock()
    health = scheduler_health(config, clock)
    sched = Scheduler(driver, clock, tasks, config=config, metrics=metrics, health=health)
    ticker = asyncio.ensure_future(health.tick())  # /livez: the loop turns
    server = None
    try:
        # Served before the start, as a worker's: the probes say "starting" while the database is awaited.
        server, served = served_metrics(metrics, metrics_port, metrics_host, as_json=as_json, health=health)
        if not served:
            return EXIT_ERROR
        started = await start_when_reachable(driver, sched.holder, start_timeout, as_json=as_json)
        if started is not None:
            return started
        health.started = True  # its start reached the database; its ticks keep it ready
        health.beat()
        loop = asyncio.get_running_loop()
        runner = loop.create_task(sched.run(), name="jobs-scheduler")
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, runner.cancel)
        names = ",".join(t.name for t in tasks)
        where = "" if server is None else f"; /metrics, /livez and /readyz on http://{metrics_host}:{metrics_port}"
        print(f"jobsctl scheduler {sched.holder} pid {os.getpid()} declaring {names}{where}", flush=True)
        try:
            await runner
        except asyncio.CancelledError:
            pass
        await sched.step_down()
        return 0
    finally:
        ticker.cancel()
        if server is not None:
            server.shutdown()  # type: ignore[attr-defined]
        await driver.close()
