"""What a handler receives: ``ctx.job`` (the claimed row), ``ctx.signal`` (its cancellation),
``ctx.step`` (durable steps), and a few conveniences."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.runtime.signal import RunSignal
from engine.runtime.steps import StepApi
from engine.types import JobRow


@dataclass
class JobContext:
    job: JobRow
    signal: RunSignal
    step: StepApi

    @property
    def id(self) -> str:
        return self.job.id

    @property
    def attempt(self) -> int:
        return self.job.attempt

    @property
    def tenant(self) -> str | None:
        return self.job.tenant

    @property
    def input(self) -> Any:
        return self.job.input
