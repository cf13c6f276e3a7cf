"""The one source of time. Nothing in the engine reads the wall clock any other way."""

from __future__ import annotations

import asyncio
import math
import os
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol

from engine.errors import X_INVALID_ARGUMENT, JobsError


class Clock(Protocol):
    def now(self) -> datetime:
        """An aware UTC datetime."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (durations, lease bookkeeping)."""
        ...

    async def sleep(self, seconds: float) -> None: ...

    def call_later(self, seconds: float, fn: Callable[[], object]) -> Timer:
        """Call ``fn`` on the running loop once ``seconds`` have passed, unless cancelled first:
        a deadline without a task of its own."""
        ...


class Timer(Protocol):
    def cancel(self) -> object: ...


def worker_clock(clock: Clock | None) -> Clock:
    """The clock a worker runs on: ``clock``, or the system's. One an application wrote itself
    must also time a run's deadlines (``call_later``): refused here, before any job runs."""
    if clock is None:
        return SystemClock()
    if not callable(getattr(clock, "call_later", None)):
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"the clock {type(clock).__name__} has no call_later(seconds, fn), which times a run's deadlines "
            "(engine.SystemClock has it, engine.FakeClock too for tests; a clock of your own may define it)",
            fix=f"class {type(clock).__name__}(engine.SystemClock): ...",
        )
    return clock


class SystemClock:
    skew = 0.0  # seconds this process's wall clock is moved by (SkewedClock); 0 on every real clock

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    def call_later(self, seconds: float, fn: Callable[[], object]) -> Timer:
        return asyncio.get_running_loop().call_later(max(0.0, seconds), fn)


class SkewedClock(SystemClock):
    """The system clock moved by ``skew`` seconds (``now()`` only: durations and lease bookkeeping
    stay on the monotonic clock). For tests only: the torture run gives each worker process its
    own, to prove the fleet keeps its guarantees while the processes' clocks disagree within the
    margin README.md states ("Clocks")."""

    def __init__(self, skew: float) -> None:
        self.skew = skew
        self._delta = timedelta(seconds=skew)

    def now(self) -> datetime:
        return datetime.now(UTC) + self._delta


SKEW_ENV = "JOBS_TEST_CLOCK_SKEW"


def process_clock() -> SystemClock:
    """The clock a `jobsctl worker` process runs on: the system's, or, when $JOBS_TEST_CLOCK_SKEW
    names a number of seconds (tests only), the system's moved by that much. A value that is not
    a finite number is refused before anything starts."""
    raw = os.environ.get(SKEW_ENV, "").strip()
    if not raw:
        return SystemClock()
    try:
        skew = float(raw)
    except ValueError:
        skew = math.nan
    if not math.isfinite(skew):
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"{SKEW_ENV}={raw!r} is not a number of seconds (the variable is for tests only: "
            f"{SKEW_ENV}=0.5 runs this process's clock half a second ahead)",
            fix=f"unset {SKEW_ENV}",
        )
    return SkewedClock(skew) if skew else SystemClock()


class FakeClock:
    """A clock that moves only when told. ``sleep`` waits until ``advance`` passes its deadline,
    so code that waits on time can be driven step by step without real sleeping."""

    def __init__(self, start: datetime | None = None) -> None:
        # A naive start would be read as local time by whoever stores it: every instant off by the offset.
        if start is not None and (not isinstance(start, datetime) or start.utcoffset() is None):
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"FakeClock start={start!r:.60} is not a datetime with a time zone",
                fix="FakeClock(datetime(2026, 1, 1, tzinfo=UTC))",
            )
        self._now = start or datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
        self._mono = 0.0
        self._lock = threading.Lock()
        self._sleepers: list[tuple[float, asyncio.Future[None], asyncio.AbstractEventLoop]] = []

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def monotonic(self) -> float:
        with self._lock:
            return self._mono

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._move(seconds, self._mono + seconds)

    def wake_next(self) -> float:
        """Move time on to the earliest sleeper's deadline exactly (a sum of floats could fall a
        hair short of it), waking it and any due with it; the seconds moved."""
        with self._lock:
            deadline = min(s[0] for s in self._sleepers)
            step = deadline - self._mono
            self._move(step, deadline)
        return step

    def _move(self, seconds: float, mono: float) -> None:
        """Time on by ``seconds``, to the monotonic reading ``mono``; the sleepers due woken.
        Called holding the lock."""
        self._now += timedelta(seconds=seconds)
        self._mono = mono
        due = [s for s in self._sleepers if s[0] <= self._mono]
        self._sleepers = [s for s in self._sleepers if s[0] > self._mono]
        for _, fut, loop in due:
            loop.call_soon_threadsafe(_resolve, fut)

    def set(self, when: datetime) -> None:
        self.advance((when - self.now()).total_seconds())

    @property
    def sleepers(self) -> int:
        with self._lock:
            return len(self._sleepers)

    async def sleep(self, seconds: float) -> None:
        await self._sleeper(seconds)

    def call_later(self, seconds: float, fn: Callable[[], object]) -> Timer:
        """A sleeper whose waking calls ``fn``; cancelling it (the future) calls nothing."""
        fut = self._sleeper(seconds)
        fut.add_done_callback(lambda f: None if f.cancelled() else fn())
        return fut

    def _sleeper(self, seconds: float) -> asyncio.Future[None]:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if seconds <= 0:
                fut.set_result(None)
            else:
                self._sleepers.append((self._mono + seconds, fut, loop))
        return fut


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def later(now: datetime, seconds: float, *, what: str, fix: str) -> datetime:
    """``now`` plus ``seconds`` (already checked to be a finite number >= 0), refused as
    X_INVALID_ARGUMENT when that is past the year 9999, the last a datetime holds: ``what`` names
    the value in the cause ("delay=1e12 seconds")."""
    try:
        return now + timedelta(seconds=seconds)
    except OverflowError:
        raise JobsError(X_INVALID_ARGUMENT, cause=f"{what} is past the year 9999", fix=fix) from None


def utc(dt: datetime) -> datetime:
    """Normalise a datetime to aware UTC; a naive one is refused rather than guessed."""
    if dt.tzinfo is None:
        raise ValueError(f"naive datetime {dt.isoformat()} has no time zone; pass an aware datetime")
    return dt.astimezone(UTC)
