"""The signal one run is cancelled by: an operator's cancel, the attempt's timeout, a drain.

Nothing can kill a body that ignores it, so durable state is fenced instead: once the signal is
aborted every step write is refused (X_ABORTED, I10), and a body that finishes anyway is logged
as abandoned.
"""

from __future__ import annotations

import asyncio
from typing import Any

from engine.errors import X_ABORTED, JobsError


class RunSignal:
    # Nothing is made until someone waits (an Event per job was ~5% of a draining worker's CPU,
    # and most runs end without anyone waiting on their signal): each waiter is a future resolved
    # with the reason at the abort.
    __slots__ = ("_futures", "reason")

    def __init__(self) -> None:
        self._futures: list[asyncio.Future[str]] | None = None
        self.reason: str | None = None  # "cancelled" | "timeout" | "lease-lost" | "drain"

    @property
    def aborted(self) -> bool:
        return self.reason is not None

    def abort(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
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
        fut: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.resolve(fut)
        try:
            return await fut
        finally:
            self.forget(fut)

    def raise_if_aborted(self, what: str = "write") -> None:
        if self.aborted:
            raise JobsError(
                X_ABORTED,
                cause=f"refused a {what} after the run was stopped ({self.reason})",
                fix="check ctx.signal.aborted in long handlers and return early",
            )


def resolve_once(fut: asyncio.Future[Any], value: str) -> None:
    """The first of the racers to call this sets ``fut``'s result; the others do nothing."""
    if not fut.done():
        fut.set_result(value)
