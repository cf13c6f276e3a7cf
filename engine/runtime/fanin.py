"""Waiting in a step for other jobs to settle: ``await ctx.step.wait_for_jobs("resized", ids)``.

A handler fans out by enqueueing jobs in a step (``ctx.step.enqueue``: a replay answers the
stored ids and enqueues nothing again) and fans in by waiting for them: the run is suspended (I7:
no attempt burned, no error) and answers, once every job has settled (or, ``fail_fast``, once one
died or was cancelled), each one's outcome in the order given. A dead or cancelled job is an
outcome, not an error. The wait looks at the jobs again half a
second after it starts, then after a tenth of the time it has waited so far, never less often
than the job's ``event_poll``: nothing on the waited jobs' path tells their waiter (an ack writes
nothing for it), so the hot path pays nothing and the wait notices a settled set within a tenth
of its length (or ``event_poll``) of the last one settling.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from engine.errors import X_INVALID_ARGUMENT, X_WAITED_JOB_GONE, JobsError
from engine.ids import parse_id
from engine.retry import register_error_retry
from engine.types import FINAL_STATES, JobRow, JobState

MAX_JOBS = 1_000  # one wait's ids ride in the job's wait (jsonb) on every suspension
POLL_FIRST, POLL_SHARE = 0.5, 0.1  # seconds to the first look; the share of the wait so far after it

# A job that is gone stays gone: every retry would fail the same way.
register_error_retry({X_WAITED_JOB_GONE: "terminal"})

_FIX = 'ids = await ctx.step.run("fan-out", enqueue_all); await ctx.step.wait_for_jobs("fan-in", ids)'


def check_job_ids(step: str, ids: Any, own_id: str) -> list[str]:
    """The ids a wait names, canonical and in the order given, or X_INVALID_ARGUMENT."""
    if isinstance(ids, (str, bytes)) or not isinstance(ids, (list, tuple)):
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"step {step!r}: wait_for_jobs takes a list of job ids, not {type(ids).__name__} {ids!r}"[:300],
            fix=_FIX,
        )
    if not 1 <= len(ids) <= MAX_JOBS:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"step {step!r}: wait_for_jobs takes 1 to {MAX_JOBS:,} job ids, not {len(ids):,} "
            "(fewer, larger jobs need no more than one wait)",
            fix=f"[await ctx.step.wait_for_jobs(f'{step}-{{i}}', ids[i : i + {MAX_JOBS}]) "
            f"for i in range(0, len(ids), {MAX_JOBS})]",
        )
    out: list[str] = []
    for value in ids:
        jid = parse_id(value) if isinstance(value, str) else None
        if jid is None:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"step {step!r}: {value!r} is not a job id (the id enqueue answered, a UUID)"[:300],
                fix="ids = [eng.enqueue(resize, {'image': i}).id for i in images]",
            )
        if jid == own_id:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"step {step!r}: job {own_id} would wait for itself, which never settles while it waits",
                fix="wait for the jobs this one enqueued, not for ctx.id",
            )
        out.append(jid)
    return out


def outcome(row: JobRow) -> dict[str, Any]:
    """What the wait answers for one settled job (JSON, stored as the step's result)."""
    return {
        "id": row.id,
        "name": row.name,
        "state": row.state.value,
        "result": row.result,
        "error_code": row.error_code,
        "error": None if row.state is JobState.COMPLETED else row.last_error,
        "stop_reason": row.stop_reason,
    }


def next_look(started: datetime, now: datetime, event_poll: float) -> datetime:
    """When the wait looks at its jobs again: POLL_FIRST after it starts, then a POLL_SHARE of
    the time waited so far, at most ``event_poll`` apart."""
    waited = max(0.0, (now - started).total_seconds())
    return now + timedelta(seconds=min(event_poll, max(POLL_FIRST, waited * POLL_SHARE)))


def gone(step: str, job_id: str, first: bool) -> JobsError:
    """X_WAITED_JOB_GONE for the first of a wait's ids that names no job."""
    when = "names no job" if first else "names a job that is gone (discarded, or pruned past its retention)"
    return JobsError(
        X_WAITED_JOB_GONE,
        cause=f"step {step!r} waits for job {job_id}, which {when}",
        fix=f"wait only for ids enqueue answered, in a step before the wait: {_FIX}",
    )


def check_fail_fast(name: str, fail_fast: Any) -> dict[str, bool]:
    """``fail_fast`` as the wait records it: only when True (a wait without it reads as before)."""
    if not isinstance(fail_fast, bool):
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"step {name!r}: fail_fast={fail_fast!r} must be True or False",
            fix=f"await ctx.step.wait_for_jobs({name!r}, ids, fail_fast=True)",
        )
    return {"fail_fast": True} if fail_fast else {}


def goes_on(wait: dict[str, Any], rows: list[JobRow]) -> bool:
    """Whether a look at ``rows`` (the wait's jobs, in its order) ends the wait: each has settled,
    or, when the wait is ``fail_fast``, one of them died or was cancelled."""
    if all(r.state in FINAL_STATES for r in rows):
        return True
    return bool(wait.get("fail_fast")) and any(r.state in (JobState.DEAD, JobState.CANCELLED) for r in rows)
