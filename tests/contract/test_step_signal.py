"""Each step has its own cancellation signal (engine/runtime/step_signal.py): a sync step in its
thread sees `step_timeout` through it and can return early; one that returns after the abort is
logged as `jobs.step.abandoned`. On every driver, with the fake clock."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest

from engine import FakeClock, RetryPolicy, job
from engine.drivers.base import Driver
from engine.errors import X_STEP_TIMEOUT
from engine.runtime.step_signal import StepSignal
from tests.contract.test_steps_e2e import QUEUE, engine, settled, worker

STARTED = threading.Event()
SAW: list[str | None] = []


def watches(signal: StepSignal) -> str:
    """A sync step that does its work in slices and stops when its signal says so."""
    STARTED.set()
    for _ in range(300):  # up to 30 s of real time in 0.1 s slices; the abort ends it at once
        if signal.wait(0.1):
            break
    SAW.append(signal.reason)
    return "late"


@job(
    name="sig.sync_step",
    queue=QUEUE,
    idempotency_key=lambda inp: inp["k"],
    step_timeout=5,
    retry=RetryPolicy(attempts=2, backoff="fixed", delay=60),
)
async def sync_step(ctx, inp):  # type: ignore[no-untyped-def]
    return await ctx.step.run("watches", watches)


class Seen(logging.Handler):
    def __init__(self, event: str) -> None:
        super().__init__()
        self.event, self.fired, self.records = event, threading.Event(), []  # type: ignore[var-annotated]

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() == self.event:
            self.records.append(record)
            self.fired.set()


async def test_i10_a_sync_step_sees_its_step_timeout_through_its_own_signal_and_is_logged_abandoned(
    driver: Driver, clock: FakeClock
) -> None:
    STARTED.clear()
    SAW.clear()
    seen_log = Seen("jobs.step.abandoned")
    logging.getLogger("jobs").addHandler(seen_log)
    try:
        eng = engine(driver, clock)
        async with worker(driver, clock, sync_step) as seen:
            r = await eng.aenqueue(sync_step, {"k": "s"})
            assert await asyncio.to_thread(STARTED.wait, 10)  # the step runs in its thread
            clock.advance(5)  # past step_timeout
            out = await settled(seen, driver)
            assert await asyncio.to_thread(seen_log.fired.wait, 10)  # the thread returned, and said so
    finally:
        logging.getLogger("jobs").removeHandler(seen_log)
    assert (out.outcome, out.error_code) == ("retried", X_STEP_TIMEOUT)
    assert SAW == ["step-timeout"]  # the step saw its own signal, with the reason
    (rec,) = seen_log.records
    assert rec.levelno == logging.WARNING
    (step,) = await driver.step_list(job_id=r.id)
    assert (step.name, step.status) == ("watches", "failed")  # the late "late" was never stored


def test_a_step_signal_is_set_once_and_keeps_its_first_reason() -> None:
    s = StepSignal()
    assert not s.aborted and not s.wait(0)
    s.abort("step-timeout")
    s.abort("drain")
    assert s.aborted and s.reason == "step-timeout" and s.wait(0)


@pytest.mark.parametrize("takes", [True, False])
def test_a_step_function_gets_the_signal_only_when_it_names_a_signal_parameter(takes: bool) -> None:
    from engine.runtime.step_signal import takes_signal

    assert takes_signal((lambda signal: 1) if takes else (lambda: 1)) is takes
