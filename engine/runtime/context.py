"""What a handler receives: ``ctx.job`` (the claimed row), ``ctx.signal`` (its cancellation),
``ctx.step`` (durable steps), ``ctx.engine`` (to enqueue through), and a few conveniences."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.runtime.fanout import no_engine
from engine.runtime.signal import RunSignal
from engine.runtime.steps import StepApi
from engine.types import JobRow


class JobContext:
    """``ctx.job``, ``ctx.signal`` and ``ctx.step``. The step runner is built on first use of
    ``ctx.step``: most handlers never take a step, and building one per run cost a draining
    worker ~4% of its CPU."""

    __slots__ = ("job", "signal", "_step", "_make_step", "_engine")

    def __init__(
        self,
        job: JobRow,
        signal: RunSignal,
        step: StepApi | Callable[[], StepApi],
        engine: Callable[[], Any] | None = None,
    ) -> None:
        self.job = job
        self.signal = signal
        self._step: StepApi | None = step if isinstance(step, StepApi) else None
        self._make_step = None if isinstance(step, StepApi) else step
        self._engine = engine

    @property
    def engine(self) -> Any:
        """The engine the worker runs for (``eng.worker(...)``'s, or the one `jobsctl worker` opens):
        what a handler enqueues through (``await ctx.engine.aenqueue(...)``), on the worker's pools."""
        if self._engine is None:
            raise no_engine("ctx.engine")
        return self._engine()

    @property
    def step(self) -> StepApi:
        if self._step is None:
            assert self._make_step is not None
            self._step = self._make_step()
        return self._step

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
