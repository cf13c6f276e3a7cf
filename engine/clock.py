"""The one source of time. Nothing in the engine reads the wall clock any other way."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """An aware UTC datetime."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (durations, lease bookkeeping)."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


class FakeClock:
    """A clock that moves only when told. ``sleep`` waits until ``advance`` passes its deadline,
    so code that waits on time can be driven step by step without real sleeping."""

    def __init__(self, start: datetime | None = None) -> None:
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
            self._now += timedelta(seconds=seconds)
            self._mono += seconds
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
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if seconds <= 0:
                fut.set_result(None)
            else:
                self._sleepers.append((self._mono + seconds, fut, loop))
        await fut


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def utc(dt: datetime) -> datetime:
    """Normalise a datetime to aware UTC; a naive one is refused rather than guessed."""
    if dt.tzinfo is None:
        raise ValueError(f"naive datetime {dt.isoformat()} has no time zone; pass an aware datetime")
    return dt.astimezone(UTC)
