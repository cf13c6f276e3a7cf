"""A job's family: `jobsctl children ID` (the jobs below a job, those its steps enqueued with
``ctx.step.enqueue`` or waited for with ``ctx.step.wait_for_jobs``, and theirs, breadth first, as
they stand), and what `jobsctl cancel | retry ID --children` and `jobsctl retry --all --children` do
with them (ops.py parses those commands)."""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

import typer

from engine.cli import app
from engine.cli.acting import (
    EXIT_NOOP,
    EXIT_STOPPED,
    confirmed,
    dry_run_only,
    not_confirmed,
    operator,
    result,
    said,
    stopped_by_signal,
    typed,
)
from engine.cli.admin import DSN_HELP, JSON_HELP, TENANT_HELP
from engine.cli.reads import console, emit, run, summaries
from engine.types import LIVE_STATES, JobState


@app.command()
def children(
    job_id: str = typer.Argument(..., help="the job's id, or a unique short id (6+ hex digits of its head or tail)"),
    tenant: str = typer.Option(None, "--tenant", help=TENANT_HELP),
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """The jobs below a job (enqueued or waited for by its steps, and theirs), by state."""
    below = run(dsn, json_out, lambda e: e.operator(tenant=tenant).children(job_id))
    if json_out:
        return emit(below)
    out = console()
    by_state = Counter(b.state.value for b in below)
    tally = ", ".join(f"{n} {s}" for s, n in by_state.most_common())
    out.print(f"{len(below)} jobs below {job_id}" + (f": {tally}" if tally else ""))
    if below:
        out.print(summaries(below))


def with_children(
    action: Literal["cancel", "retry"],
    job_id: str,
    yes: bool,
    tenant: str | None,
    note: str | None,
    dsn: str | None,
    actor: str | None,
    json_out: bool,
) -> None:
    """A cancel or retry with its children, as a bulk action: the dry run (the jobs below it it
    reaches: live ones for a cancel, by state; dead ones for a retry, by error code), then a
    confirmation unless --yes, then the action, one line a job."""
    below = run(dsn, json_out, lambda e: operator(e, actor).children(job_id, tenant=tenant))
    if action == "cancel":  # the live ones, by state
        reached = Counter(b.state.value for b in below if b.state in LIVE_STATES)
    else:  # the dead ones, by what killed them
        reached = Counter(b.error_code or "no error code" for b in below if b.state is JobState.DEAD)
    n = reached.total()
    if not json_out:
        tally = ", ".join(f"{k} {s}" for s, k in reached.most_common()) or "none"
        which = "live" if action == "cancel" else "dead"
        settled = "have settled" if action == "cancel" else "are not dead"
        console().print(
            f"dry run: {action} {job_id} and the {n} {which} jobs below it ({tally}); "
            f"{len(below) - n} below it {settled} and stay as they are"
        )
    dry_run_only(as_json=json_out)  # read-only: the dry run above is all it does
    if not yes and (json_out or not confirmed(f"{action} {job_id} and {n} jobs below it?")):
        again = typed("jobsctl", action, job_id, "--children", tenant=tenant, note=note, actor=actor, dsn=dsn)
        not_confirmed(again, as_json=json_out)
    res = run(
        dsn, json_out, lambda e: getattr(operator(e, actor), action)(job_id, tenant=tenant, note=note, children=True)
    )
    result(res, json_out)


def retry_trees(
    where: Any, plan: Any, rate: float | None, note: str | None, dsn: str | None, actor: str | None, json_out: bool
) -> None:
    """``retry --all --children``: each matched dead job retried with the dead jobs below it, a line
    a job as it lands (JSON: the plan and every answer)."""

    async def each(e: Any, stop: Any) -> tuple[list[Any], bool]:
        got = []
        async for res in operator(e, actor).retry_all_with_children(
            where, note=note, per_second=rate, stop=stop, plan=plan
        ):
            got.append(res)
            if not json_out:
                said(res)
        return got, stop.is_set()

    results, stopped = run(dsn, json_out, lambda e: stopped_by_signal(lambda stop: each(e, stop)))
    if json_out:
        emit({"plan": plan, "results": results, "stopped": stopped})
    elif stopped:
        console().print("stopped by a signal: the jobs not reached are as they were")
    if stopped:
        raise typer.Exit(EXIT_STOPPED)
    if not any(r.changed for r in results):
        raise typer.Exit(EXIT_NOOP)
