"""The signal one run is cancelled by: an operator's cancel, the attempt's timeout, a drain.

Nothing can kill a body that ignores it, so durable state is fenced instead: once the signal is
aborted every step write is refused (X_ABORTED, I10), and a body that finishes anyway is logged
as abandoned.
"""

from __future__ import annotations

import asyncio

from engine.errors import X_ABORTED, JobsError


class RunSignal:
    def __init__(self) -> None:
        self._event = asyncio.Event()
        self.reason: str | None = None  # "cancelled" | "timeout" | "lease-lost" | "drain"

    @property
    def aborted(self) -> bool:
        return self._event.is_set()

    def abort(self, reason: str) -> None:
        if not self._event.is_set():
            self.reason = reason
            self._event.set()

    async def wait(self) -> str:
        await self._event.wait()
        return self.reason or "aborted"

    def raise_if_aborted(self, what: str = "write") -> None:
        if self.aborted:
            raise JobsError(
                X_ABORTED,
                cause=f"refused a {what} after the run was stopped ({self.reason})",
                fix="check ctx.signal.aborted in long handlers and return early",
            )
