"""A worker's start waits for its database as its loops do later: a database that does not
answer (X_DB_UNREACHABLE: down, restarting, or its connections terminated mid-start) is retried
with backoff, each retry logged (`jobs.worker.waiting-for-database`), until it answers or
``start_timeout`` passes. Any other refusal (no schema, migrations pending) is an operator's to
fix and is raised at once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from engine.errors import X_DB_UNREACHABLE, JobsError
from engine.runtime import logs
from engine.runtime.settle import Backoff

FIRST_RETRY = 0.1  # seconds; doubling up to CEILING
CEILING = 5.0


async def when_reachable(connect: Callable[[], Awaitable[None]], *, worker: str, start_timeout: float | None) -> None:
    """Run ``connect`` until it does not fail for want of the database."""
    loop = asyncio.get_running_loop()
    began, attempt = loop.time(), 0
    backoff = Backoff(FIRST_RETRY, CEILING)
    while True:
        try:
            await connect()
        except JobsError as exc:
            if exc.code != X_DB_UNREACHABLE:
                raise
            attempt += 1
            waited = loop.time() - began
            if start_timeout is not None and waited + backoff.next > start_timeout:
                raise JobsError(
                    X_DB_UNREACHABLE,
                    cause=f"{exc.cause} (still, after {attempt} attempts in {waited:.1f} s; start_timeout "
                    f"{start_timeout:g} s)",
                    fix=exc.fix,
                ) from None
            logs.emit(
                logs.WORKER_WAITING_FOR_DATABASE,
                logging.WARNING,
                worker=worker,
                attempt=attempt,
                waited=round(waited, 3),
                retry_in=backoff.next,
                error=exc.cause,
            )
            await backoff.wait()
            continue
        if attempt:
            logs.emit(logs.WORKER_RECONNECTED, what="start", worker=worker, attempts=attempt + 1)
        return
