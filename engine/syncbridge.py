"""A private event loop on a daemon thread, so sync callers (Django, Flask, scripts) get the
same async driver without owning a loop. Each loop has its own connection pool (see pool.py)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from engine.errors import X_SYNC_IN_LOOP, JobsError
from engine.forks import per_process

T = TypeVar("T")


class LoopThread:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        per_process(self)

    def forsake(self) -> list[Any]:
        """In a forked child (engine/forks.py): the parent's loop, whose thread the child does not
        have, forgotten; the child's first call starts a loop of its own."""
        held = [self._loop, self._thread]
        self._loop = self._thread = None
        self._lock = threading.Lock()
        return held

    def _ensure(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                t = threading.Thread(target=loop.run_forever, name="jobs-sync-bridge", daemon=True)
                t.start()
                self._loop, self._thread = loop, t
            return self._loop

    @property
    def started(self) -> bool:
        return self._loop is not None

    def owns(self, loop: asyncio.AbstractEventLoop | None) -> bool:
        """Whether ``loop`` is this bridge's own."""
        return loop is not None and loop is self._loop

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """``coro`` run on the bridge's loop, its answer handed back to the calling thread. Called
        from the bridge's own loop (a coroutine running there that makes a sync call) it would
        wait for itself for ever: refused."""
        loop = self._ensure()
        if threading.current_thread() is self._thread:
            coro.close()
            raise JobsError(
                X_SYNC_IN_LOOP,
                cause="a sync engine call was made from a coroutine running on the engine's own event loop, "
                "where it would wait for itself for ever",
                fix="await eng.aenqueue(...) (each sync call has an a-prefixed twin) in async code",
            )
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    def stop(self) -> None:
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=5)
            loop.close()
