"""`jobs children ID`: the jobs below a job, those its steps enqueued (``ctx.step.enqueue``) or
waited for (``ctx.step.wait_for_jobs``) and theirs, breadth first, as they stand: what `jobs cancel
ID --children` and `jobs retry ID --children` reach, before either is run."""

from __future__ import annotations

from collections import Counter

import typer

from engine.cli import app
from engine.cli.admin import DSN_HELP, JSON_HELP, TENANT_HELP
from engine.cli.reads import console, emit, run, summaries


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
