"""run_due / arun_due: run the jobs a test enqueued until none is left (in the test's own event
loop for arun_due; on the engine's private loop for run_due, as the engine's other sync calls)."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from typing import Any

from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.runtime.execute import Execution


@dataclass(frozen=True)
class Ran:
    """What each run came to, in the order the runs ended."""

    executions: tuple[Execution, ...]

    @property
    def outcomes(self) -> dict[str, int]:
        """How many runs ended each way: {"completed": 3, "retried": 1}."""
        return dict(Counter(ex.outcome for ex in self.executions))

    def of(self, job_id: str) -> list[Execution]:
        """The runs of one job, in order."""
        return [ex for ex in self.executions if ex.job_id == job_id]


def run_due(engine: Any, jobs: Any, *, timeout: float = 30.0, **options: Any) -> Ran:
    """arun_due for sync tests (Django's, Flask's): run on the engine's private loop, as
    ``engine.enqueue`` is. An async handler there that makes a sync engine call is refused
    (X_SYNC_IN_LOOP): it would wait for itself."""
    return engine._sync(arun_due(engine, jobs, timeout=timeout, **options))


async def arun_due(engine: Any, jobs: Any, *, timeout: float = 30.0, **options: Any) -> Ran:
    """Run every job due in the queues of ``jobs`` (a job handle, a list of them, a module or a
    Registry), and every job those runs enqueue, until nothing there is due and every run has
    settled: a burst worker (engine/runtime/burst.py) in this loop. A retry waits out its backoff
    as a delayed job, so it is not run again here (advance a FakeClock given to connect() and call
    again, or set the job's retry policy). ``options`` are Engine.worker's (queues, concurrency,
    ...); the worker leads no maintenance, relay or scheduler unless asked (maintenance=True, ...).
    ``relay=True``: the worker's relay publishes the staged outbox rows, and the burst ends only
    once nothing staged is left unpublished (those runs may stage more).
    Raises TimeoutError when the runs have not all ended after ``timeout`` seconds."""
    for name in ("burst", "on_execution"):
        if name in options:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"run_due sets {name} itself",
                fix="ran = run_due(engine, jobs), then read ran.executions",
            )
    for service in ("maintenance", "relay", "scheduler"):
        options.setdefault(service, False)
    ended: list[Execution] = []
    worker = engine.worker(jobs, burst=True, on_execution=ended.append, **options)
    await worker.start()
    try:
        async with asyncio.timeout(timeout):
            await worker.wait_stopped()
    except TimeoutError:
        raise TimeoutError(
            f"run_due gave up after {timeout:g} s: {worker.in_use} run(s) had not ended, {len(ended)} had"
        ) from None
    finally:
        await worker.drain(grace=0)
    return Ran(tuple(ended))
