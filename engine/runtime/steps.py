"""Durable steps (placeholder until the durable-steps issue lands: every call refuses clearly)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from engine.clock import Clock
from engine.drivers.base import Driver
from engine.errors import X_NOT_IMPLEMENTED, JobsError
from engine.runtime.signal import RunSignal
from engine.types import Claim, JobRow


class StepApi:
    def __init__(
        self,
        *,
        driver: Driver,
        claim: Claim,
        row: JobRow,
        clock: Clock,
        signal: RunSignal,
        step_timeout: float | None,
        event_poll: float,
    ) -> None:
        self.driver, self.claim, self.row, self.clock = driver, claim, row, clock
        self.signal, self.step_timeout, self.event_poll = signal, step_timeout, event_poll

    def _refuse(self, what: str) -> JobsError:
        return JobsError(X_NOT_IMPLEMENTED, cause=f"ctx.step.{what} is not available yet", fix="upgrade jobs")

    async def run(self, name: str, fn: Callable[[], Any]) -> Any:
        raise self._refuse("run")

    async def sleep(self, name: str, seconds: float) -> None:
        raise self._refuse("sleep")

    async def sleep_until(self, name: str, when: datetime) -> None:
        raise self._refuse("sleep_until")

    async def wait_for_event(self, name: str, *, event: str, match: dict[str, Any] | None = None, timeout: float | None = None) -> Any:
        raise self._refuse("wait_for_event")
