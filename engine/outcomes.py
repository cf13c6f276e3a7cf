"""Waiting for a job's outcome: ``await eng.aoutcome(job_id, timeout=30)`` answers the job's row
once it has settled (completed, dead or cancelled), for a script, a deploy step or a request that
needs the result of work it handed to the queue.

The wait reads the row by its primary key, 10 ms after it starts and then twice as long each
time up to ``POLL_MAX``: nothing is added to the hot path (no NOTIFY per ack), a job that settles
within milliseconds is seen within milliseconds, and a long job costs one indexed read per
``POLL_MAX``. A dead or cancelled job is an outcome, not an error: the row says how it ended. Only
the wait itself fails: X_WAIT_TIMEOUT past ``timeout`` (the job goes on: nothing is changed), and
X_NOT_FOUND for a job that does not exist, is another tenant's, or was discarded meanwhile.
"""

from __future__ import annotations

import math
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
    limit = check_timeout(timeout)
    clock = view.clock
    started = clock.monotonic()
    row = await load_job(view, job_id, tenant)
    pause = POLL_FIRST
    while row.state not in FINAL_STATES:
        waited = clock.monotonic() - started
        if limit is not None and waited >= limit:
            raise still_live(row, limit)
        await clock.sleep(pause if limit is None else min(pause, limit - waited))
        pause = min(pause * 2, POLL_MAX)
        found = await view.driver.job_get(job_id=row.id)
        if found is None:  # pruned or discarded while it was waited for
            raise await gone_error(view, row.id, tenant)
        row = found
    return row


def still_live(row: JobRow, timeout: float) -> JobsError:
    """X_WAIT_TIMEOUT for ``row``, still live after ``timeout`` seconds: where it stands, and
    where to read more (a running job's steps so far; else what it waits for)."""
    longer = max(60, round(timeout * 2))
    read = (
        f"jobs show {row.id} has its steps so far"
        if row.state is JobState.RUNNING
        else f"jobs why {row.id} says what it waits for"
    )
    return JobsError(
        X_WAIT_TIMEOUT,
        cause=(
            f"job {row.id} ({row.name}) is still {row.state.value} after {timeout:g} s, attempt {row.attempt} of "
            f"{row.max_attempts}; it goes on, nothing was changed"
        ),
        fix=f"wait longer (timeout={longer}, or --timeout {longer}s); {read}",
    )
