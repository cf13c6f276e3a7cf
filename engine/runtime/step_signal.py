"""Each step's own cancellation signal, and how a step function is called with it.

`step_timeout` (or the run's signal) cancels a step's asyncio task, but a plain function runs in a
thread that nothing can stop. So every `ctx.step.run` call gets a `StepSignal`, thread-safe, passed
to the function when it takes a parameter named ``signal`` (``def fetch(signal): ...``). A sync step
should check ``signal.aborted`` (or ``signal.wait(seconds)`` instead of ``time.sleep``) between units
of work and return early once it is set: its result is never stored after that. A sync step that
returns after its signal was aborted is logged as `jobs.step.abandoned`, as the job-level timeout
logs `jobs.timeout.abandoned`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from typing import Any

from engine.runtime import logs
from engine.types import JobRow


class StepSignal:
    """Set once, from the loop; read from any thread. ``reason``: step-timeout | cancelled | timeout |
    lease-lost | slot-lost | drain (the run's reason when the whole run was stopped)."""

    __slots__ = ("_event", "reason")

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason: str | None = None

    @property
    def aborted(self) -> bool:
        return self._event.is_set()

    def abort(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
            self._event.set()

    def wait(self, seconds: float | None = None) -> bool:
        """For a sync step: block up to ``seconds`` (a cancellable sleep); True once aborted."""
        return self._event.wait(seconds)


def takes_signal(fn: Any) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # a builtin without a signature: called as before, without one
        return False
    return "signal" in params


def is_async(fn: Any) -> bool:
    # iscoroutinefunction sees through functools.partial; an object may have an async __call__.
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)


async def invoke_step(fn: Any, signal: StepSignal, row: JobRow, step: str) -> Any:
    kw = {"signal": signal} if takes_signal(fn) else {}
    if is_async(fn):
        out = fn(**kw)
    else:
        out = await asyncio.to_thread(_sync_step, fn, kw, signal, row, step)
    if inspect.isawaitable(out):  # `lambda: fetch(url)` over an async fetch
        out = await out
    return out


def _sync_step(fn: Any, kw: dict[str, Any], signal: StepSignal, row: JobRow, step: str) -> Any:
    # In the thread: the loop stopped waiting for us when the step's signal was aborted, so a step
    # that returns after that did its work for nothing, and says so.
    out = fn(**kw)
    if signal.aborted:
        logs.emit(
            logs.STEP_ABANDONED,
            logging.WARNING,
            job_id=row.id,
            name=row.name,
            queue=row.queue,
            attempt=row.attempt,
            step=step,
            reason=signal.reason,
        )
    return out
