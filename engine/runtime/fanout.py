"""Enqueueing in a step: ``ids = await ctx.step.enqueue("thumbs", [Enqueue(make_thumb, {...}), ...])``.

The jobs and the step that stores their ids are one commit, fenced on the run's claim
(``driver.step_enqueue``): a run that dies before it leaves neither, one that dies after it
leaves both, so a replay answers the stored ids and no job of a fan-out is ever enqueued twice.
A run that lost its claim writes nothing (``X_ABORTED``). Each job is checked as
``eng.enqueue_many`` checks it, and deduped the same way (I2): a job whose key a live job holds
answers that job's id.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.errors import X_INVALID_ARGUMENT, JobsError

MAX_JOBS = 1000  # a step's jobs: one statement, and a list wait_for_jobs takes whole


def check_specs(name: str, jobs: Any) -> list[Any]:
    """The jobs of ``ctx.step.enqueue(name, jobs)`` as a list: refused before anything is
    written when they are not a list or iterable of jobs, none, or more than MAX_JOBS. Each
    item is checked as an ``Enqueue`` when it is built."""
    fix = f"await ctx.step.enqueue({name!r}, [Enqueue(make_thumb, {{'n': n}}) for n in range(3)])"
    if isinstance(jobs, (str, bytes, Mapping)) or not hasattr(jobs, "__iter__"):
        raise JobsError(X_INVALID_ARGUMENT, cause=f"step {name!r}: {jobs!r} is not a list of Enqueue", fix=fix)
    specs = list(jobs)
    if not specs or len(specs) > MAX_JOBS:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"step {name!r} enqueues {len(specs)} jobs; a step enqueues from 1 to {MAX_JOBS:,}",
            fix=f"enqueue in several steps of at most {MAX_JOBS:,} (ctx.step.enqueue(f'{name}-{{i}}', chunk))",
        )
    return specs


def no_engine(what: str) -> JobsError:
    """``what`` needs the engine the worker runs for, and a worker built on a bare driver has none."""
    return JobsError(
        X_INVALID_ARGUMENT,
        cause=f"this worker was built on a bare driver, so its runs have no engine for {what} "
        "(`jobsctl worker MODULE` builds it with one; a handler may also enqueue through an engine of its own)",
        fix="async with eng.worker([...]):",
    )
