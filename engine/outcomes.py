"""Waiting for a job's outcome: ``await eng.aoutcome(job_id, timeout=30)`` answers the job's row
once it has settled (completed, dead or cancelled), for a script, a deploy step or a request that
needs the result of work it handed to the queue.

The wait reads the row by its primary key (the rows of every job waited for, in one statement),
10 ms after it starts and then twice as long each time up to ``POLL_MAX``: nothing is added to the
hot path (no NOTIFY per ack), a job that settles within milliseconds is seen within milliseconds,
and a long job costs one indexed read per ``POLL_MAX``. A dead or cancelled job is an outcome, not an error: the row says how it ended. Only
the wait itself fails: X_WAIT_TIMEOUT past ``timeout`` (the job goes on: nothing is changed), and
X_NOT_FOUND for a job that does not exist, is another tenant's, or was discarded meanwhile.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from engine.errors import X_INVALID_ARGUMENT, X_WAIT_TIMEOUT, JobsError
from engine.introspect.base import EngineView, gone_error, load_job
from engine.types import FINAL_STATES, JobRow, JobState

POLL_FIRST, POLL_MAX = 0.01, 0.5  # seconds between two reads of the row: doubling from the first


def check_timeout(timeout: Any) -> float | None:
    """``timeout`` as seconds (None: as long as it takes), or X_INVALID_ARGUMENT."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 <= timeout < math.inf:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"timeout={timeout!r} must be a finite number of seconds >= 0, or None to wait as long as it takes",
            fix="eng.outcome(job_id, timeout=30)",
        )
    return float(timeout)


async def await_outcome(view: EngineView, job_id: Any, *, tenant: str | None, timeout: Any) -> JobRow:
    """The settled row of the job ``job_id`` names (an id or a unique short id), read again until
    it has settled or ``timeout`` seconds have passed."""
    (answer,) = await await_outcomes(view, [job_id], tenant=tenant, timeout=timeout)
    if isinstance(answer, JobsError):
        raise answer
    return answer


async def await_outcomes(
    view: EngineView, job_ids: Sequence[Any], *, tenant: str | None, timeout: Any
) -> list[JobRow | JobsError]:
    """Each job's settled row, in the order given, or the error that ended its wait (X_WAIT_TIMEOUT
    past ``timeout``, X_NOT_FOUND for one discarded meanwhile). Every id is resolved first (an id
    that names no job raises at once, before anything waits); then the jobs still live are read
    together, one statement a poll, until none is or the time is up."""
    limit = check_timeout(timeout)
    clock = view.clock
    started = clock.monotonic()
    rows = [await load_job(view, job_id, tenant) for job_id in job_ids]
    ended: dict[int, JobsError] = {}
    pause = POLL_FIRST
    while live := [i for i, r in enumerate(rows) if i not in ended and r.state not in FINAL_STATES]:
        waited = clock.monotonic() - started
        if limit is not None and waited >= limit:
            ended.update((i, still_live(rows[i], limit)) for i in live)
            break
        await clock.sleep(pause if limit is None else min(pause, limit - waited))
        pause = min(pause * 2, POLL_MAX)
        found = {r.id: r for r in await view.driver.job_get_many(job_ids=[rows[i].id for i in live])}
        for i in live:
            if rows[i].id in found:
                rows[i] = found[rows[i].id]
            else:  # pruned or discarded while it was waited for
                ended[i] = await gone_error(view, rows[i].id, tenant)
    return [ended.get(i, r) for i, r in enumerate(rows)]


def still_live(row: JobRow, timeout: float) -> JobsError:
    """X_WAIT_TIMEOUT for ``row``, still live after ``timeout`` seconds: where it stands, and
    where to read more (a running job's steps so far; else what it waits for); its fix, the wait
    again for longer (``meta["wait"]``: the seconds), as a Python caller writes it (`jobsctl
    wait` says its own: engine/cli/waits.py)."""
    longer = max(60, round(timeout * 2))
    read = (
        f"jobsctl show {row.id} has its steps so far"
        if row.state is JobState.RUNNING
        else f"jobsctl why {row.id} says what it waits for"
    )
    return JobsError(
        X_WAIT_TIMEOUT,
        cause=(
            f"job {row.id} ({row.name}) is still {row.state.value} after {timeout:g} s, attempt {row.attempt} of "
            f"{row.max_attempts}; it goes on, nothing was changed ({read})"
        ),
        fix=f"await eng.aoutcome({row.id!r}, timeout={longer})",
        meta={"job_id": row.id, "wait": longer},
    )
