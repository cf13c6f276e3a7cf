"""The signal one run is cancelled by: an operator's cancel, the attempt's timeout, a drain.

Nothing can kill a body that ignores it, so durable state is fenced instead: once the signal is
aborted every step write is refused (X_ABORTED, I10), and a body that finishes anyway is logged
as abandoned.
"""

from __future__ import annotations

import asyncio

from engine.errors import X_ABORTED, JobsError


class RunSignal:
    # The event is made only when someone waits: one per job was ~5% of a draining worker's CPU,
    # and most runs end without anyone waiting on their signal.
    __slots__ = ("_event", "_futures", "reason")

    def __init__(self) -> None:
        self._event: asyncio.Event | None = None
        self._futures: list[asyncio.Future[str]] | None = None  # resolved with the reason at abort
        self.reason: str | None = None  # "cancelled" | "timeout" | "lease-lost" | "drain"

    @property
    def aborted(self) -> bool:
        return self.reason is not None

    def abort(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
            if self._event is not None:
                self._event.set()
            for fut in self._futures or ():
                resolve_once(fut, reason)

    def resolve(self, fut: asyncio.Future[str]) -> None:
        """Set ``fut``'s result to the reason when the run is aborted (at once if it is), until
        ``forget(fut)``: a step's race against the signal without a task waiting on it."""
        if self.reason is not None:
            resolve_once(fut, self.reason)
        elif self._futures is None:
            self._futures = [fut]
        else:
            self._futures.append(fut)

    def forget(self, fut: asyncio.Future[str]) -> None:
        if self._futures is not None and fut in self._futures:
            self._futures.remove(fut)

    async def wait(self) -> str:
        if self.reason is None:
            if self._event is None:
                self._event = asyncio.Event()
            await self._event.wait()
        return self.reason or "aborted"

    def raise_if_aborted(self, what: str = "write") -> None:
        if self.aborted:
            raise JobsError(
                X_ABORTED,
                cause=f"refused a {what} after the run was stopped ({self.reason})",
                fix="check ctx.signal.aborted in long handlers and return early",
            )


def resolve_once(fut: asyncio.Future[str], value: str) -> None:
    """The first of the racers to call this sets ``fut``'s result; the others do nothing."""
    if not fut.done():
        fut.set_result(value)
