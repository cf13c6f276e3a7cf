"""`jobsctl backfill`: the pending alarm, the status of every declared backfill, and starting,
following, cancelling and retrying a pass.

  jobsctl backfill --pending [--json]            exit 4 when anything is pending here (a deploy gate)
  jobsctl backfill [--status] [--json]           every backfill: status, progress, the gate a start meets
  jobsctl backfill NAME [--write] [--force] [--wait [--timeout 30m]] [--json]   enqueue a pass (a dry run by default)
  jobsctl backfill NAME --cancel | --retry | --history

--app names the module declaring them (default $JOBS_APP); --env the environment (default $JOBS_ENV).
"""

from __future__ import annotations

import asyncio
import importlib
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import typer

from engine.cli import EXIT_DRIFT, app, error_text, fail
from engine.cli.acting import ACTOR_HELP, EXIT_NOOP
from engine.cli.admin import DSN_HELP, JSON_HELP, driver_options, resolve_dsn
from engine.cli.read_only import STATE as READ_ONLY
from engine.cli.reads import console, emit, table, to_json
from engine.cli.waits import EXIT_UNSUCCESSFUL, EXIT_WAIT_TIMEOUT, stopped_following
from engine.durations import duration, parse_duration
from engine.errors import X_BACKFILL_PENDING, X_INVALID_ARGUMENT, X_WAIT_TIMEOUT, JobsError

T = TypeVar("T")
FINAL = ("completed", "failed", "stalled", "cancelled")


def load_catalog(module: str | None) -> Any:
    from engine.backfills import Catalog
    from engine.cli.worker import app_target, load_target

    target = app_target(module, "jobsctl backfill --pending --app myapp.backfills")
    load_target(target, "jobsctl backfill --app {target}")  # the import and its errors, as the worker's
    mod = importlib.import_module(target.partition(":")[0])
    return Catalog.of(mod)


def _run(dsn: str | None, env: str | None, json_out: bool, call: Callable[[Any], Awaitable[T]]) -> T:
    from engine.api import connect

    try:
        eng = connect(resolve_dsn(dsn), environment=env, **driver_options())
    except JobsError as err:
        fail(err, as_json=json_out)

    async def go() -> T:
        try:
            return await call(eng)
        finally:
            await eng.driver.close()

    try:
        return asyncio.run(go())
    except JobsError as err:
        fail(err, as_json=json_out)
        raise


def _control(eng: Any, catalog: Any, actor: str | None) -> Any:
    from engine.actions.base import default_actor
    from engine.backfills import BackfillControl

    return BackfillControl(  # read-only in read-only mode: the engine refuses what the command refused first
        eng, catalog, actor=actor or default_actor(), environment=eng.environment, read_only=READ_ONLY.on
    )


def _pending(catalog: Any, dsn: str | None, env: str | None, json_out: bool) -> None:
    from engine.backfills.control import env_command

    async def call(eng: Any) -> tuple[str, list[Any]]:
        ctl = _control(eng, catalog, None)
        return ctl.environment, await ctl.pending()

    environment, pending = _run(dsn, env, json_out, call)
    rows = []
    for d in pending:
        err = JobsError(
            X_BACKFILL_PENDING,
            cause=f"backfill {d.backfill!r} is declared and jobs.backfill holds no completed write pass for it "
            f"in {environment}",
            fix=env_command(d, environment, "--write", explicit=env is not None),
        )
        rows.append({"name": d.backfill, "error": err.as_dict()})
    if json_out:
        emit({"environment": environment, "pending": rows})
    else:
        out = console()
        if not rows:
            out.print(f"nothing pending in {environment}")
        for r in rows:
            out.print(f"error {r['error']['code']}: {r['error']['cause']}\n  fix: {r['error']['fix']}")
    if rows:
        raise typer.Exit(EXIT_DRIFT)


def _status(catalog: Any, dsn: str | None, env: str | None, json_out: bool) -> None:
    views = _run(dsn, env, json_out, lambda e: _control(e, catalog, None).views())
    if json_out:
        return emit(views)
    t = table("backfill", "env", "status", "last pass", "swept", "remaining", "batches/s", "ETA", "gate")
    for v in views:
        p, last = v.progress, v.last
        t.add_row(
            v.name,
            v.environment,
            v.status,
            "" if last is None else f"{'dry-run' if last.dry_run else 'write'} {last.status}",
            *swept_and_remaining(p),
            "" if p is None or p.batches_per_second is None else f"{p.batches_per_second:.1f}",
            "" if p is None or p.eta_seconds is None or v.status != "running" else duration(p.eta_seconds),
            "" if v.gate is None else v.gate.code,
        )
    console().print(t)


def swept_and_remaining(p: Any) -> tuple[str, str]:
    """The status table's swept and remaining cells of a pass's progress. A dry run writes
    nothing: its rows were read, and what remains is what a write pass would write, the count()
    it took at its start; never its own rows left to read, which a finished one has none of."""
    if p is None:
        return "", ""
    if not p.dry_run:
        return str(p.swept), "" if p.remaining is None else str(p.remaining)
    return f"{p.swept} read", "" if p.planned is None else f"would write {p.planned}"


def _follow(
    catalog: Any,
    name: str,
    job_id: str,
    dsn: str | None,
    env: str | None,
    json_out: bool,
    *,
    timeout: float | None = None,
    announce: str | None = None,
) -> int:
    """Follow a pass until its job has ended, with a progress bar, and answer the exit code every
    wait answers: 0 completed; 6 failed, stalled or cancelled; 7 still live past ``timeout``
    seconds; 130 interrupted (Ctrl-C). The pass goes on in the last two, and the fix says how to
    follow it again. ``announce``: a line printed before following; a Ctrl-C once it is out is
    answered as above."""

    async def call(eng: Any) -> tuple[Any, Any, bool]:
        ctl = _control(eng, catalog, None)
        deadline = None if timeout is None else time.monotonic() + timeout
        bar = None
        if not json_out:
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

            bar = Progress(
                TextColumn(name),
                BarColumn(),
                TextColumn("{task.completed}/{task.total} rows"),
                TimeRemainingColumn(),
                console=console(),
            )
            bar.start()
            task = bar.add_task(name, total=None)
        try:
            while True:
                p = await ctl.progress(name)
                job = await eng.aget(job_id)
                if bar is not None and p is not None:
                    bar.update(task, completed=p.swept, total=p.planned)
                if job.state.value in ("completed", "dead", "cancelled"):
                    return p, job, False
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return p, job, True
                # A person watching: the display's refresh, not a wait for a condition.
                await asyncio.sleep(0.5 if left is None else min(0.5, left))
        finally:
            if bar is not None:
                bar.stop()

    try:
        if announce is not None:
            console().print(announce)
            sys.stdout.flush()
        p, job, live = _run(dsn, env, json_out, call)
    except KeyboardInterrupt:
        return stopped_following(f"stopped following {name}; its pass {job_id} goes on", [job_id], json_out)
    late = None
    if live:
        late = JobsError(
            X_WAIT_TIMEOUT,
            cause=f"the pass {job_id} of {name} is still {p.status if p is not None else job.state.value} after "
            f"--timeout {duration(timeout)}; it goes on",
            fix=f"jobsctl wait {job_id}",
        )
    if json_out:
        said_json: dict[str, Any] = {
            "progress": p,
            "job": {"id": job.id, "state": job.state.value, "last_error": job.last_error},
        }
        if late is not None:
            said_json["error"] = late.as_dict()
        emit(said_json)
    else:
        said_line = p.status if p else job.state.value
        if p is not None and p.dry_run:  # what it read and what a write pass would write, not rows left
            said_line = f"dry run {said_line}: " + ", ".join(c for c in swept_and_remaining(p) if c)
        console().print(f"{name}: {said_line}" + (f" ({job.last_error})" if job.last_error else ""))
        if late is not None:
            sys.stderr.write(error_text(late))
    if late is not None:
        return EXIT_WAIT_TIMEOUT
    return 0 if p is not None and p.status == "completed" else EXIT_UNSUCCESSFUL


def _check_env(env: str | None, what: str) -> None:
    """--env as the engine takes an environment (engine/backfills/declare.py, resolve_environment),
    refused before any connection with this command as the fix, not connect()'s."""
    from engine.backfills.declare import resolve_environment

    if env is None:
        return
    try:
        resolve_environment(env)
    except JobsError as err:
        cause = err.cause.replace("environment=", "--env ", 1) if err.cause.startswith("environment=") else err.cause
        raise JobsError(err.code, cause=cause, fix=f"jobsctl backfill {what} --env production") from None


ONE_BACKFILL = ("--history", "--cancel", "--retry", "--write", "--force", "--wait")  # the flags that need a NAME


def _one_mode(
    name: str | None,
    pending: bool,
    status: bool,
    history: bool,
    cancel: bool,
    retry: bool,
    write: bool,
    force: bool,
    wait: bool,
    actor: str | None = None,
    timeout: str | None = None,
) -> None:
    """Refuse a combination of which a part would be dropped: one of --pending, --status,
    --history, --cancel and --retry (or a start); --write and --force only start a pass, --force
    only with --write; --wait follows a start or a retry, and --timeout bounds --wait; --actor
    names who starts, cancels or retries a pass, which a read does not."""
    modes = [
        f
        for f, on in (
            ("--pending", pending),
            ("--status", status),
            ("--history", history),
            ("--cancel", cancel),
            ("--retry", retry),
        )
        if on
    ]
    starting = [f for f, on in (("--write", write), ("--force", force)) if on]
    refusal: tuple[str, str] | None = None
    who = name or "NAME"
    # The first mode alone (when one is given): --pending and --status list every backfill, no name.
    first = modes[0] if modes else ""
    alone = f"jobsctl backfill {first}" if first in ("--pending", "--status") else f"jobsctl backfill {who} {first}"
    if len(modes) > 1:
        refusal = f"{' and '.join(modes)} are each a command of their own", alone
    elif modes and starting:
        refusal = (
            f"{' and '.join(starting)} {'start' if len(starting) > 1 else 'starts'} a pass; {modes[0]} starts none",
            alone,
        )
    elif force and not write:
        refusal = (
            "--force reruns an applied backfill's write pass; a dry run is never refused",
            f"jobsctl backfill {who} --write --force",
        )
    elif wait and modes and modes[0] != "--retry":
        refusal = f"--wait follows a pass that starts or continues; {modes[0]} starts none", alone
    elif timeout is not None and not wait:
        follows_nothing = modes and modes[0] != "--retry"  # --cancel, --history...: --timeout goes
        refusal = (
            "--timeout bounds --wait, and no --wait was given",
            alone
            if follows_nothing
            else " ".join(["jobsctl backfill", who, *modes, *starting, "--wait", "--timeout", timeout]),
        )
    elif name is None and (one := [f for f in (*modes, *starting, "--wait" if wait else "") if f in ONE_BACKFILL]):
        # Without a name the command reads every backfill's status, and the flag would do nothing.
        refusal = f"{one[0]} acts on one backfill, and no NAME was given", f"jobsctl backfill NAME {one[0]}"
    elif name is not None and modes and modes[0] in ("--pending", "--status"):
        refusal = f"{modes[0]} lists every backfill; the name {name!r} is not read", f"jobsctl backfill {modes[0]}"
    elif actor is not None and (name is None or (modes and modes[0] in ("--pending", "--status", "--history"))):
        read = modes[0] if modes else "the status"
        refusal = (
            f"--actor names who starts, cancels or retries a pass; {read} only reads, so it would not be recorded",
            f"jobsctl backfill {' '.join(w for w in (name, modes[0] if modes else '--status') if w)}",
        )
    if refusal is not None:
        raise JobsError(X_INVALID_ARGUMENT, cause=refusal[0], fix=refusal[1])


@app.command("backfill")
def backfill_cmd(
    name: str = typer.Argument(None, help="a declared backfill (none: every one's status)"),
    app_module: str = typer.Option(None, "--app", help="the module declaring the backfills (default $JOBS_APP)"),
    pending: bool = typer.Option(False, "--pending", help="list what is pending here; exit 4 when anything is"),
    status: bool = typer.Option(False, "--status", help="every backfill's status, progress and gate"),
    write: bool = typer.Option(False, "--write", help="write (default: a dry run that counts and reads)"),
    force: bool = typer.Option(False, "--force", help="with --write: rerun an applied backfill (a new ledger row)"),
    wait: bool = typer.Option(
        False, "--wait", help="follow the pass; exit 0 completed, 6 failed, stalled or cancelled, 130 on Ctrl-C"
    ),
    timeout: str = typer.Option(None, "--timeout", help="with --wait: how long to follow, e.g. 30m (past it exit 7)"),
    cancel: bool = typer.Option(False, "--cancel", help="cancel its live pass"),
    retry: bool = typer.Option(False, "--retry", help="continue its failed, stalled or cancelled pass from its batch"),
    history: bool = typer.Option(False, "--history", help="its ledger rows here, newest first"),
    env: str = typer.Option(None, "--env", help="the environment (default $JOBS_ENV, else development)"),
    actor: str = typer.Option(None, "--actor", help=ACTOR_HELP),
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Backfills: the pending alarm, status, and starting, following, cancelling or retrying a pass."""
    try:
        catalog = load_catalog(app_module)
        if name is not None:
            catalog.get(name)  # X_BACKFILL_UNKNOWN, before the database
        _one_mode(name, pending, status, history, cancel, retry, write, force, wait, actor, timeout)
        _check_env(env, name or ("--pending" if pending else "--status"))
        limit = None if timeout is None else parse_duration(timeout, "--timeout")
    except JobsError as err:
        fail(err, as_json=json_out)
    if pending:
        return _pending(catalog, dsn, env, json_out)
    if name is None or status:
        return _status(catalog, dsn, env, json_out)
    if history:
        runs = _run(dsn, env, json_out, lambda e: _control(e, catalog, actor).history(name))
        if json_out:
            return emit(runs)
        t = table("run", "status", "mode", "forced", "started", "finished", "swept", "batches", "error")
        for r in runs:
            t.add_row(
                r.id,
                r.status,
                "dry-run" if r.dry_run else "write",
                "yes" if r.forced else "",
                str(r.started_at)[:19],
                str(r.finished_at or "")[:19],
                str(r.swept),
                str(r.batches),
                r.error or "",
            )
        return console().print(t)
    if cancel or retry:
        res = _run(
            dsn, env, json_out, lambda e: getattr(_control(e, catalog, actor), "cancel" if cancel else "retry")(name)
        )
        if json_out:
            emit(res)
        else:
            console().print(
                f"{res.action} {name} pass {res.job_id}: {'done' if res.changed else 'nothing changed'}"
                + (f"; {res.reason}" if res.reason else "")
            )
        if not res.changed:
            raise typer.Exit(EXIT_NOOP)
        if retry and wait:
            raise typer.Exit(_follow(catalog, name, res.job_id, dsn, env, json_out, timeout=limit))
        return
    started = _run(dsn, env, json_out, lambda e: _control(e, catalog, actor).start(name, write=write, force=force))
    if not wait:
        if json_out:
            return emit(started)
        mode = "write" if write else "dry run"
        return console().print(
            f"{started.job_id} {mode} pass of {name} enqueued in {started.environment} (run {started.run_id})"
        )
    announce = None if json_out else f"{started.job_id} {'write' if write else 'dry run'} pass of {name} enqueued"
    raise typer.Exit(_follow(catalog, name, started.job_id, dsn, env, json_out, timeout=limit, announce=announce))


__all__ = ["backfill_cmd", "load_catalog", "to_json"]
