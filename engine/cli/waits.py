"""`jobsctl wait ID...` and `jobsctl enqueue --wait`: wait until jobs have settled and say how each
ended (engine/outcomes.py), for a deploy step or a script that must not go on before its job did.
Exit 0: every job completed; 6: one ended dead or cancelled; 7: one was still live past
--timeout (the jobs go on; nothing is changed); 3: an id names no job; 130: the person waiting
interrupted it (Ctrl-C; the jobs go on, and one line says how to follow them again)."""

from __future__ import annotations

import json
import os
import shlex
import sys
from typing import Any

import typer

from engine.cli import app, error_text, fail
from engine.cli.acting import EXIT_STOPPED
from engine.cli.admin import DSN_EXAMPLE, DSN_HELP, JSON_HELP, TENANT_HELP
from engine.cli.reads import clip, console, emit, run, to_json
from engine.durations import parse_duration
from engine.errors import X_INVALID_ARGUMENT, X_WAIT_TIMEOUT, JobsError
from engine.text import printable
from engine.types import JobRow, JobState

EXIT_UNSUCCESSFUL = 6  # a job waited for ended dead or cancelled
EXIT_WAIT_TIMEOUT = 7  # a job waited for was still live past --timeout
TIMEOUT_HELP = "how long to wait, e.g. 30s, 5m (default: as long as it takes)"


def stopped_following(stopped: str, job_ids: list[str], json_out: bool) -> int:
    """A wait the person following it interrupted (Ctrl-C): one line on stderr saying what was
    stopped (``stopped``, which says the jobs go on) and, as its fix, how to follow them again; the
    answer is EXIT_STOPPED (130). Nothing is changed: only the waiting stopped."""
    said = {"stopped": stopped, "fix": f"jobsctl wait {' '.join(job_ids)}"}
    text = f"{said['stopped']}\n  fix: {said['fix']}\n"
    sys.stderr.write(json.dumps(said, ensure_ascii=False) + "\n" if json_out else printable(text))
    return EXIT_STOPPED


def wait_limit(wait: bool, timeout: str | None) -> float | None:
    """--timeout in seconds (None: no limit); given without --wait, refused: it would do nothing."""
    if timeout is not None and not wait:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause="--timeout bounds a wait, and no --wait was given",
            fix="jobsctl enqueue NAME --wait --timeout 5m",
        )
    return None if timeout is None else parse_duration(timeout, "--timeout")


def refuse_waiting_in_memory(dsn: str | None, name: str) -> None:
    """`enqueue --wait` on memory://: the job lives in this command's own store, which no worker
    reads, so it could never settle; refused before anything is enqueued."""
    given = dsn or os.environ.get("JOBS_DSN") or ""
    if given.strip().startswith("memory:"):
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause="--wait waits for a worker to run the job, and memory:// is this command's own store, "
            "which no worker reads: the job would never settle",
            fix=f"jobsctl enqueue {name} --wait --dsn {DSN_EXAMPLE}",
        )


@app.command()
def wait(
    job_ids: list[str] = typer.Argument(..., help="job ids, or unique short ids (6+ hex digits of the head or tail)"),
    timeout: str = typer.Option(None, "--timeout", help=TIMEOUT_HELP),
    tenant: str = typer.Option(None, "--tenant", help=TENANT_HELP),
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Wait until each job has settled and print how it ended.

    Exit 0: every one completed; 6: one ended dead or cancelled; 7: one is still live past --timeout."""
    try:
        limit = wait_limit(True, timeout)
    except JobsError as err:
        fail(err, as_json=json_out)
    wait_for(job_ids, limit, tenant, dsn, json_out)


def wait_for(
    job_ids: list[str], limit: float | None, tenant: str | None, dsn: str | None, json_out: bool, enqueued: Any = None
) -> None:
    """Wait for ``job_ids`` together; print each one's outcome (or that it is still live) in the
    order given, and exit with what they say. ``enqueued``: the enqueue the JSON answer carries."""

    async def outcomes(eng: Any) -> list[JobRow | JobsError]:
        # Every id is resolved before anything waits: a mistyped one fails at once (exit 3); the
        # live ones are then read together, one statement a poll. Imported here: a worker's
        # process (the same CLI) never loads the read side.
        from engine.introspect.base import EngineView
        from engine.outcomes import await_outcomes

        answers = await await_outcomes(EngineView(eng), job_ids, tenant=tenant, timeout=limit)
        for a in answers:  # a still-live job is an answer; a job gone meanwhile is the command's error
            if isinstance(a, JobsError) and a.code != X_WAIT_TIMEOUT:
                raise a
        return [_waited(a, tenant) for a in answers]

    try:
        got = run(dsn, json_out, outcomes)
    except KeyboardInterrupt:
        which = f"job {job_ids[0]}; it goes on" if len(job_ids) == 1 else f"{len(job_ids)} jobs; they go on"
        raise typer.Exit(stopped_following(f"stopped waiting for {which}", job_ids, json_out)) from None
    if json_out:
        rows = [{"error": g.as_dict()} if isinstance(g, JobsError) else {"job": to_json(g)} for g in got]
        emit(rows if enqueued is None else {"enqueued": to_json(enqueued), "outcome": rows[0]})
    else:
        out = console()
        for g in got:
            if isinstance(g, JobsError):
                sys.stderr.write(error_text(g))
            else:
                out.print(outcome_line(g))
    if any(isinstance(g, JobsError) for g in got):
        raise typer.Exit(EXIT_WAIT_TIMEOUT)
    if any(isinstance(g, JobRow) and g.state is not JobState.COMPLETED for g in got):
        raise typer.Exit(EXIT_UNSUCCESSFUL)


def _waited(answer: JobRow | JobsError, tenant: str | None) -> JobRow | JobsError:
    """A still-live job's X_WAIT_TIMEOUT with the fix this command's user types: the wait again,
    for longer (engine/outcomes.py, still_live, says it as a Python call)."""
    if not isinstance(answer, JobsError) or "wait" not in answer.meta:
        return answer
    scope = "" if tenant is None else f" --tenant {shlex.quote(tenant)}"
    fix = f"jobsctl wait {answer.meta['job_id']} --timeout {answer.meta['wait']}s{scope}"
    return JobsError(answer.code, cause=answer.cause, fix=fix, docs=answer.docs, meta=answer.meta)


def outcome_line(row: JobRow) -> str:
    """How ``row`` ended, on one line: its result, or its stop reason and last error."""
    head = f"{row.id} {row.name} {row.state.value} at attempt {row.attempt} of {row.max_attempts}"
    if row.state is JobState.COMPLETED:
        return f"{head}: {clip(json.dumps(row.result), 200)}"
    if row.state is JobState.DEAD:  # the error begins with its code (when it has one) and ends with its stop reason
        error = row.last_error or ""
        code = "" if not row.error_code or error.startswith(f"{row.error_code}:") else f"{row.error_code} "
        return f"{head}: {code}{clip(error, 200)}"
    return f"{head}" + (f": {clip(row.last_error, 200)}" if row.last_error else "")
