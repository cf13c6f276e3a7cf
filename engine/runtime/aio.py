"""asyncio helpers the worker's loops and its drain share: waits that end on time, and stopping
tasks that may not stop when first told to.

A cancellation can be lost: on Python 3.11, ``asyncio.wait_for`` returns normally when the awaited
call finishes in the same turn as the cancellation, and psycopg_pool waits for a connection with
it, so a task cancelled inside a pool checkout may go on with its connection and its loop. Every
stop here therefore cancels again until the task ends, and gives up at a deadline: a drain ends in
bounded time whatever the database does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

RECANCEL = 0.05  # seconds between cancellations of a task that did not end


async def first(*aws: Awaitable[Any]) -> None:
    """Wait for the first of ``aws`` to finish; cancel the rest."""
    tasks = [asyncio.ensure_future(a) for a in aws]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in tasks:
            if not t.done():
                t.cancel()


async def finish(task: asyncio.Task[Any]) -> None:
    """Await ``task``, ignoring its own cancellation and its errors (the caller's cancellation is raised)."""
    try:
        await task
    except asyncio.CancelledError:
        if not task.cancelled():
            raise
    except Exception:
        pass


def _retrieve(task: asyncio.Future[Any]) -> None:
    # Read a finished task's outcome, so an error it ended with is not reported as never retrieved.
    if task.done() and not task.cancelled():
        task.exception()


async def stop(tasks: Iterable[asyncio.Future[Any]], deadline: float) -> list[asyncio.Future[Any]]:
    """Cancel ``tasks`` and wait for them to end, cancelling again every RECANCEL seconds while
    any runs, until ``deadline`` (the loop's clock). Answers the tasks still running then."""
    loop = asyncio.get_running_loop()
    every = list(tasks)
    pending = {t for t in every if not t.done()}
    while pending:
        for t in pending:
            t.cancel()
        left = deadline - loop.time()
        if left <= 0:
            break
        _, pending = await asyncio.wait(pending, timeout=min(RECANCEL, left))
    for t in every:
        _retrieve(t)
    return list(pending)


def cancel_until_done(task: asyncio.Future[Any], deadline: float) -> asyncio.Task[list[asyncio.Future[Any]]]:
    """Cancel ``task`` now, and again every RECANCEL seconds until it ends or ``deadline`` (the
    loop's clock): what a SIGTERM during a start does, the start's waits for the database going
    through pool checkouts that can lose one cancellation. Keep the answered task referenced."""
    return asyncio.get_running_loop().create_task(stop([task], deadline))


async def until(deadline: asyncio.Future[Any], tasks: Iterable[asyncio.Future[Any]]) -> None:
    """Wait until every one of ``tasks`` ended or ``deadline`` (a future) is done, whichever is
    first; nothing is cancelled."""
    waiting = set(tasks)
    while not deadline.done():
        waiting = {t for t in waiting if not t.done()}
        if not waiting:
            return
        await asyncio.wait(waiting | {deadline}, return_when=asyncio.FIRST_COMPLETED)


async def within(step: Callable[[], Awaitable[Any]], deadline: float, *, stop_wait: float = 0.5) -> bool:
    """Run ``step()`` until ``deadline`` (the loop's clock); past it, stop it (allowing
    ``stop_wait`` more seconds for it to end). A step whose deadline passed before it began is not
    begun. True when it finished in time; its errors are swallowed (the callers are best-effort
    steps of a drain)."""
    loop = asyncio.get_running_loop()
    if deadline <= loop.time():
        return False
    task = asyncio.ensure_future(step())
    done, _ = await asyncio.wait({task}, timeout=max(0.0, deadline - loop.time()))
    if task in done:
        _retrieve(task)
        return True
    await stop([task], loop.time() + stop_wait)
    return False
