"""A worker's start waits for its database as its loops do later: a database that does not
answer (X_DB_UNREACHABLE: down, restarting, or its connections terminated mid-start) is retried
with backoff, each retry logged (`jobs.worker.waiting-for-database`), until it answers or
``start_timeout`` passes (a last try at the deadline itself). Any other refusal (no schema,
migrations pending) is an operator's to fix and is raised at once."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from engine.clock import Clock, SystemClock
from engine.errors import X_DB_UNREACHABLE, JobsError
from engine.runtime import logs
from engine.runtime.failures import Backoff

FIRST_RETRY = 0.1  # seconds; doubling up to CEILING
CEILING = 5.0


async def when_reachable(
    connect: Callable[[], Awaitable[None]],
    *,
    worker: str,
    start_timeout: float | None,
    clock: Clock | None = None,
) -> None:
    """Run ``connect`` until it does not fail for want of the database. With ``start_timeout``,
    the last wait is cut short to end at the deadline, where ``connect`` runs a last time: a
    database that answers before the deadline is reached, however the backoff falls. ``clock``
    (real time unless given) paces the waits: they wait on the network, not on the domain's time."""
    clock = clock or SystemClock()
    began, attempt, last = clock.monotonic(), 0, False
    backoff = Backoff(FIRST_RETRY, CEILING)
    while True:
        try:
            await connect()
        except JobsError as exc:
            if exc.code != X_DB_UNREACHABLE:
                raise
            attempt += 1
            waited = clock.monotonic() - began
            left = None if start_timeout is None else start_timeout - waited
            if last or (left is not None and left <= 0):
                raise JobsError(
                    X_DB_UNREACHABLE,
                    cause=f"{exc.cause} (still, after {attempt} attempts in {waited:.1f} s; start_timeout "
                    f"{start_timeout:g} s)",
                    fix=exc.fix,
                ) from None
            delay = backoff.take()
            if left is not None and left <= delay:
                delay, last = left, True  # the try at the deadline is the last one
            logs.emit(
                logs.WORKER_WAITING_FOR_DATABASE,
                logging.WARNING,
                worker=worker,
                attempt=attempt,
                waited=round(waited, 3),
                retry_in=round(delay, 3),
                error=exc.cause,
            )
            await clock.sleep(delay)
            continue
        if attempt:
            logs.emit(logs.WORKER_RECONNECTED, what="start", worker=worker, attempts=attempt + 1)
        return
