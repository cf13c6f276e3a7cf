"""`jobsctl queues | ls | show | dead | workers | why | describe`: the read commands. Each prints a
rich table, or JSON with --json; an error prints as code, cause and fix (JSON on stderr)."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import json
import os
import sys
from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from engine.projections import JobSummary

from engine.cli import EXIT_DRIFT, app, fail
from engine.cli.admin import (
    APP_HELP,
    CONNECTIONS,
    DSN_HELP,
    JSON_HELP,
    TENANT_HELP,
    driver_options,
    refuse_for_subcommand,
    resolve_dsn,
)
from engine.durations import duration, relative
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.text import printable

T = TypeVar("T")
BUDGET_HELP = "seconds each query may take before it is cut off"
FILTER_HELP = "key=value: queue, state, name, tenant, code, stop, search, since, until, input.FIELD (repeatable; code=- and stop=- match rows without one)"


class FilteredCommand(typer.core.TyperCommand):
    """A command that takes its filters as ``-f key=value``: a filter key typed as an option
    (``jobsctl ls --state dead``) is answered with how to write it, not click's bare "No such option"."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        typed = list(args)  # the parser consumes ``args``
        try:
            return super().parse_args(ctx, args)
        except Exception as exc:  # click's NoSuchOption, as typer vendors it: matched by name
            if type(exc).__name__ != "NoSuchOption":
                raise
            from engine.introspect.filters import FILTER_KEYS

            name = str(getattr(exc, "option_name", ""))
            key = name.lstrip("-")
            if key not in FILTER_KEYS and not key.startswith("input."):
                raise
            at = next((i for i, a in enumerate(typed) if a == name or a.startswith(name + "=")), None)
            given = "" if at is None else typed[at].partition("=")[2] or "".join(typed[at + 1 : at + 2])
            value = given if given and not given.startswith("-") else "VALUE"
            hint = f"No such option: {name}; filters are -f {key}={value} (--filter, repeatable)"
            raise type(exc)(name, message=hint, ctx=ctx) from None  # type: ignore[call-arg]


def to_json(value: Any) -> Any:
    """Projections as plain JSON: dataclasses by field, datetimes ISO, enums by value."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    return value


def emit(value: Any) -> None:
    sys.stdout.write(json.dumps(to_json(value), ensure_ascii=False) + "\n")


def run(dsn: str | None, as_json: bool, call: Callable[[Any], Awaitable[T]]) -> T:
    """Connect, run ``call(engine)`` on a fresh loop, close; a JobsError exits with its code."""
    from engine.api import connect

    try:
        eng = connect(resolve_dsn(dsn), **driver_options())
    except JobsError as err:
        fail(err, as_json=as_json)

    async def go() -> T:
        try:
            return await call(eng)
        finally:
            await eng.aclose()

    try:
        return asyncio.run(go())
    except JobsError as err:
        fail(err, as_json=as_json)
        raise  # unreachable: fail exits


def console() -> Console:
    """The CLI's console. What it prints comes from jobs (names, tenants, errors, notes): a string is
    never read as markup (``[bold]`` in a job's name stays literal) and every control character in
    it is shown escaped (engine.text.printable), table cells included, so no terminal sequence that
    came with the data reaches the terminal."""
    from rich.console import Console  # rich on first print: `jobsctl worker` and --json print no table
    from rich.text import Text

    class DataConsole(Console):
        def render_str(self, text: str, **kw: Any) -> Text:
            return super().render_str(printable(text), **kw)

    # Piped output (a script, a log) gets a wide table instead of one squeezed into 80 columns,
    # unless $COLUMNS says how wide.
    width = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 200
    return DataConsole(
        no_color=bool(os.environ.get("NO_COLOR")), markup=False, highlight=False, soft_wrap=True, width=width
    )


def table(*columns: str) -> Table:
    from rich.table import Table

    return Table(*columns)


def clip(text: str | None, limit: int) -> str:
    """``text`` on one line of at most ``limit`` characters, cut at a word with an ellipsis."""
    one = " ".join((text or "").split())
    if len(one) <= limit:
        return one
    cut = one[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:  # a word boundary not too far back; else the long word is cut
        cut = cut[:space]
    return cut.rstrip(" ,;:.-") + "…"


def _when(dt: datetime, now: datetime) -> str:
    """A time as short as it can be: HH:MM:SS on the day of ``now``, else the date and minute."""
    return dt.strftime("%H:%M:%S") if dt.date() == now.date() else dt.strftime("%Y-%m-%d %H:%M")


def _t(dt: datetime | None) -> str:
    return "" if dt is None else dt.strftime("%Y-%m-%d %H:%M:%S")


def intro(eng: Any, budget: float) -> Any:
    """The Introspector of a read command; its --budget, each read's statement timeout, refused
    with the command's own option (Introspector's refusal names the Python keyword)."""
    from engine.introspect import Introspector
    from engine.options import timeout_rule, timeout_seconds

    if not timeout_seconds(budget):
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"--budget {budget:g} must be {timeout_rule()}: it bounds each read's statements",
            fix=f"jobsctl {CONNECTIONS.command or 'queues'} --budget 2",
        )
    return Introspector(eng, budget=budget)


@app.command()
def queues(
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    budget: float = typer.Option(2.0, "--budget", help=BUDGET_HELP),
) -> None:
    """Per queue: counts by state, oldest waiting age (ready or parked), completions in the last hour, workers, pause."""
    view = run(dsn, json_out, lambda e: intro(e, budget).queues())
    if json_out:
        return emit(view)
    t = table(
        "queue",
        "ready",
        "parked",
        "delayed",
        "running",
        "suspended",
        "dead",
        "done/1h",
        "oldest waiting",
        "workers",
        "paused",
    )
    for q in view.queues:
        t.add_row(
            q.name,
            str(q.ready),
            str(q.parked),
            str(q.delayed),
            str(q.running),
            str(q.suspended),
            str(q.dead),
            str(q.completed_last_hour),
            "" if q.oldest_ready_age is None else duration(q.oldest_ready_age),
            f"{q.workers} ({q.slots_in_use}/{q.slots_total})",
            f"by {q.paused_by}" if q.paused else "",
        )
    console().print(t)


def summaries(items: Iterable[JobSummary]) -> Table:
    """Jobs one a row, as `jobsctl ls` lists them."""
    t = table("id", "name", "queue", "tenant", "state", "attempt", "created", "error")
    for j in items:
        t.add_row(
            j.id,
            j.name,
            j.queue,
            j.tenant or "",
            j.state.value,
            f"{j.attempt}/{j.max_attempts}",
            _t(j.created_at),
            j.error_code or "",
        )
    return t


@app.command("ls", cls=FilteredCommand)
def list_jobs(
    filters: list[str] = typer.Option([], "--filter", "-f", help=FILTER_HELP),
    limit: int = typer.Option(50, "--limit", help="jobs per page (1 to 500)"),
    cursor: str = typer.Option(None, "--cursor", help="continue after a page"),
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    budget: float = typer.Option(2.0, "--budget", help=BUDGET_HELP),
) -> None:
    """The jobs matching a filter, newest first, one page at a time."""
    from engine.introspect import parse_filter

    async def call(e: Any) -> Any:
        return await intro(e, budget).jobs(parse_filter(filters), limit=limit, cursor=cursor)

    page = run(dsn, json_out, call)
    if json_out:
        return emit(page)
    out = console()
    out.print(summaries(page.items))
    out.print(f"{page.total} matching" + (f"; next page: --cursor {page.next_cursor}" if page.next_cursor else ""))


@app.command()
def show(
    job_id: str = typer.Argument(..., help="the job's id, or a unique short id (6+ hex digits of its head or tail)"),
    tenant: str = typer.Option(None, "--tenant", help=TENANT_HELP),
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    budget: float = typer.Option(2.0, "--budget", help=BUDGET_HELP),
) -> None:
    """One job: input, result, attempts, step trace, history (audit), next retry and why."""
    from engine.cli.job_text import job_json, print_job

    d = run(dsn, json_out, lambda e: intro(e, budget).job(job_id, tenant=tenant))
    if json_out:
        return emit(job_json(d))
    print_job(d)


@app.command(cls=FilteredCommand)
def dead(
    filters: list[str] = typer.Option([], "--filter", "-f", help=FILTER_HELP),
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    budget: float = typer.Option(2.0, "--budget", help=BUDGET_HELP),
) -> None:
    """Dead letters grouped by job name, error code and stop reason."""
    from engine.introspect import parse_filter
    from engine.introspect.filters import filter_options
    from engine.types import JobState

    try:
        where = parse_filter(filters)
    except JobsError as err:
        fail(err, as_json=json_out)
    if where.state not in (None, JobState.DEAD):  # the dead letters would drop it and list every one
        cause = f"dead lists dead jobs; the filter's state={where.state.value} names none of them"
        fail(JobsError(X_INVALID_ARGUMENT, cause=cause, fix=f"jobsctl ls {filter_options(where)}"), as_json=json_out)

    async def call(e: Any) -> Any:
        return await intro(e, budget).dead_letters(where)

    dl = run(dsn, json_out, call)
    if json_out:
        return emit(dl)
    rows = [
        [
            g.name,
            g.error_code or "",
            g.stop_reason or "",
            str(g.count),
            f"{g.attempt} of {g.max_attempts}",
            _when(g.first_seen, dl.at),
            _when(g.last_seen, dl.at),
        ]
        for g in dl.groups
    ]
    heads = ("name", "code", "stop", "count", "attempt", "first seen", "last seen")
    # The last error gets what the other columns leave of the terminal (at least 16), cut at a
    # word with an ellipsis and never wrapped: one line per group.
    used = sum(max([len(h)] + [len(r[i]) for r in rows]) + 3 for i, h in enumerate(heads)) + 4
    room = max(16, min(80, console().width - used))
    t = table(*heads)
    t.add_column("last error", no_wrap=True, overflow="ellipsis", min_width=min(room, 16))
    for r, g in zip(rows, dl.groups, strict=True):
        error = g.last_error or ""
        if g.error_code and error.startswith(f"{g.error_code}: "):  # the code has its own column
            error = error[len(g.error_code) + 2 :]
        t.add_row(*r, clip(error, room))
    out = console()
    out.print(t)
    for g in dl.groups:  # what each group's latest error said to do, under the one-line rows
        if g.last_fix:
            out.print(f"fix ({g.name}, {g.error_code or 'no code'}): {g.last_fix}", markup=False, highlight=False)
    out.print(f"{dl.total} dead")


# `jobsctl workers` lists them; `jobsctl workers drain ID` (engine/cli/ops.py) asks one to drain.
workers_app = typer.Typer(help="Registered workers, and asking one to drain.", no_args_is_help=False)
app.add_typer(workers_app, name="workers")


@workers_app.callback(invoke_without_command=True)
def workers(
    ctx: typer.Context,
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    budget: float = typer.Option(2.0, "--budget", help=BUDGET_HELP),
) -> None:
    """Registered workers: host, pid, queues, slots in use, last heartbeat (stale ones marked)."""
    if ctx.invoked_subcommand is not None:  # its --dsn and --json are the subcommand's (group_given)
        return refuse_for_subcommand(ctx, "budget", "bounds the reads of the workers list", as_json=json_out)
    wv = run(dsn, json_out, lambda e: intro(e, budget).workers())
    if json_out:
        return emit(wv)
    if not wv.workers:
        console().print("no worker is registered: `jobsctl worker MODULE` starts one")
        return
    t = table("id", "host", "pid", "queues", "slots", "heartbeat", "state")
    for w in wv.workers:
        t.add_row(
            w.id,
            w.host,
            str(w.pid),
            ",".join(w.queues),
            f"{w.in_use}/{w.concurrency}",
            relative(-w.heartbeat_age),
            "STALE" if w.stale else "draining" if w.stopping else "drain asked" if w.drain_requested_at else "live",
        )
    console().print(t)


@app.command()
def why(
    target: str = typer.Argument(..., help="a job id (or a unique short id), or a queue name"),
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    budget: float = typer.Option(2.0, "--budget", help=BUDGET_HELP),
) -> None:
    """Why a job is not running, or why a queue's oldest waiting age grows: the causes.

    A queue's name reads as a queue; a mistyped id is an error naming the ids it may have meant (exit 3)."""
    rep = run(dsn, json_out, lambda e: intro(e, budget).why(target))
    if json_out:
        return emit(rep)
    out = console()
    for c in rep.causes:
        out.print(f"- [{c.kind}] {c.text}", markup=False, highlight=False)
        if c.fix:
            out.print(f"  fix: {c.fix}", markup=False, highlight=False)
    if not rep.causes:
        out.print(rep.summary, markup=False, highlight=False)


@app.command()
def describe(
    app_module: str = typer.Option(None, "--app", help=APP_HELP, show_default=False),
    check: Path = typer.Option(None, "--check", help="a committed manifest: exit 4 and print a diff when it drifted"),
) -> None:
    """The manifest of declared jobs as JSON (sorted by code points; `idempotent`, never a key)."""
    import difflib

    from engine.cli.worker import app_target, load_target
    from engine.jobs import describe_jobs

    try:
        app_module = app_target(app_module, "jobsctl describe --app myapp.jobs")
        registry = load_target(app_module, "jobsctl describe --app {target}")
    except JobsError as err:
        fail(err)
    text = json.dumps(describe_jobs(registry), indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    if check is None:
        sys.stdout.write(text)
        return
    try:
        committed = check.read_text(encoding="utf-8")
    except OSError as exc:
        fail(
            JobsError(
                X_INVALID_ARGUMENT,
                cause=f"cannot read {check}: {exc.strerror}",
                fix=f"jobsctl describe --app {app_module} > {check}",
            )
        )
    if committed == text:
        sys.stdout.write(f"{check}: up to date\n")
        return
    sys.stdout.writelines(
        difflib.unified_diff(committed.splitlines(True), text.splitlines(True), str(check), "declared")
    )
    sys.stderr.write(
        f"error: {check} has drifted from the declared jobs\n  fix: jobsctl describe --app {app_module} > {check}\n"
    )
    raise typer.Exit(EXIT_DRIFT)
