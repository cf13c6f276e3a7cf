"""Suspension is control flow, not failure (I7): raised by a sleep or an event wait, it parks the
run as `suspended`, burns no attempt and is never logged as an error."""

from __future__ import annotations

from datetime import datetime
from typing import Any


class StepSuspension(BaseException):
    """BaseException on purpose: a handler's ``except Exception`` must not swallow it."""

    def __init__(self, *, run_at: datetime, wait: dict[str, Any]) -> None:
        super().__init__(f"suspended until {run_at.isoformat()}: {wait}")
        self.run_at = run_at
        self.wait = wait
