"""`jobsctl show ID`: one job's detail as text, and as JSON with what the text says of its last error.

A job keeps its last error after a later attempt completes (or is running): the text labels
such an error with the attempt it came from, and the JSON says so beside the row it reads."""

from __future__ import annotations

import json
from typing import Any

from engine.cli.reads import _t, console, to_json
from engine.projections import JobDetail
from engine.records import AttemptRecord
from engine.types import JobState


def error_attempt(d: JobDetail) -> tuple[int, AttemptRecord] | None:
    """The latest attempt that failed with an error, the one the job's last error is, with its
    place among the job's runs (1-based, as the text numbers them); None when no attempt is
    known to have failed with one."""
    failed = [(n, a) for n, a in enumerate(d.attempts, start=1) if a.error is not None]
    return failed[-1] if d.job.last_error and failed else None


def error_is_earlier(d: JobDetail, n: int) -> bool:
    """Whether an attempt came after the one that failed (the ``n``-th): settled since, or
    running now. The last error is then history, not what the job is doing."""
    return n < len(d.attempts) or d.job.state is JobState.RUNNING


def _error_label(d: JobDetail) -> str:
    """The label of the last error: its attempt named when another came after it."""
    at = error_attempt(d)
    if at is None or not error_is_earlier(d, at[0]):
        return "last error"
    n, a = at
    if n < len(d.attempts):
        after = f"before run #{len(d.attempts)} {d.attempts[-1].outcome}"
    else:
        after = f"before attempt {d.job.attempt}, running now"
    return f"last error (run #{n}, attempt {a.attempt}, {after})"


def job_json(d: JobDetail) -> dict[str, Any]:
    """The detail as JSON, with ``last_error_attempt``: the attempt the job's last error came
    from (its ``run`` and ``attempt``, as in ``attempts``) and whether a later attempt settled
    or is running since (``earlier``); null when no attempt is known to have failed with it."""
    at = error_attempt(d)
    body: dict[str, Any] = to_json(d)
    body["last_error_attempt"] = (
        None if at is None else {"run": at[1].run, "attempt": at[1].attempt, "earlier": error_is_earlier(d, at[0])}
    )
    return body


# A run's outcomes that hand its attempt back: the run goes on at its next claim, under the same
# run number and attempt, and its attempt is counted then.
UNCOUNTED = ("suspended", "parked", "released")


def _run_note(d: JobDetail, n: int, a: AttemptRecord) -> str:
    """`` (no attempt used yet)`` on the job's last run when it suspended, was shed or was released
    and has not been claimed since: the header's count leaves it out."""
    last = n == len(d.attempts) and d.job.state is not JobState.RUNNING
    return " (no attempt used yet)" if last and a.outcome in UNCOUNTED else ""


class _Trimmed:
    """show's printer: each line it prints ends at its last visible character (a run without an
    error code, a step without a duration, a stored traceback's or error's own trailing blanks)."""

    def __init__(self) -> None:
        self.out = console()

    def print(self, text: str, **kw: Any) -> None:
        self.out.print("\n".join(line.rstrip() for line in text.split("\n")), **kw)


def print_job(d: JobDetail) -> None:
    out, j = _Trimmed(), d.job
    # The job's attempt column counts the attempts used: a run that suspended, was shed or was
    # released used none (yet), so a suspended first run reads 0 beside its run #1 at attempt 1.
    out.print(
        f"{j.id}  {j.name}  queue={j.queue}  tenant={j.tenant or '-'}  state={j.state.value}  attempts used "
        f"{j.attempt} of {j.max_attempts}"
    )
    out.print(f"why: {d.why.summary}")
    if d.trace_id:  # the trace its enqueue ran in (engine/tracing.py)
        out.print(f"trace: {d.trace_id}")
    if d.next_retry:
        out.print(f"next: {d.next_retry.note}")
    if j.last_error:
        out.print(f"{_error_label(d)}: {j.last_error}")
        if d.fix:  # what the error said to do (a handler's JobsError fix)
            out.print(f"fix: {d.fix}", markup=False, highlight=False)
    # Runs are numbered in the order they ran: a retry from a step starts a new run at attempt 1.
    failed = [(n, a) for n, a in enumerate(d.attempts, start=1) if a.traceback]
    if failed:  # the latest failed attempt's, as stored (bounded by the worker's traceback_limit)
        n, a = failed[-1]
        out.print(f"traceback (run #{n}, attempt {a.attempt}):", markup=False, highlight=False)
        out.print(
            "\n".join(f"  {line}" for line in (a.traceback or "").splitlines()),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    out.print(f"input: {json.dumps(j.input)[:2000]}")
    if j.result is not None:
        out.print(f"result: {json.dumps(j.result)[:2000]}")
    for n, a in enumerate(d.attempts, start=1):
        out.print(
            f"  run #{n}: attempt {a.attempt} of {j.max_attempts} on {a.worker}: {_t(a.started_at)} -> "
            f"{_t(a.finished_at)} {a.outcome}{_run_note(d, n, a)} {a.error_code or ''}",
            markup=False,
            highlight=False,
        )
    for s in d.steps:
        out.print(
            f"  step {s.seq} {s.name} [{s.kind}] {s.status} {'' if s.duration is None else f'{s.duration:.3f}s'} "
            f"{s.error or ''}"
        )
    for p, step in d.parents:  # the jobs that enqueued it (ctx.step.enqueue)
        out.print(f"  enqueued by {p.id} {p.name} {p.state.value} in step {step!r}", markup=False, highlight=False)
    for w in d.awaited:  # the jobs it fanned out or waits for, in the order it named them
        out.print(f"  {d.awaited_as} {w.id} {w.name} {w.state.value} {w.error_code or ''}".rstrip(), markup=False)
    for h in d.history:
        what = f" {h.data['event']}" if h.kind == "event" and h.data.get("event") else ""
        out.print(
            f"  {_t(h.at)} {h.kind}{what} by {h.actor or '?'}{f' — {h.note}' if h.note else ''}",
            markup=False,
            highlight=False,
        )
