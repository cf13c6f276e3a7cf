"""A run's deadlines and its signal without a task of their own: Clock.call_later calls once its
time has passed, on the system clock and the fake one alike, and never once cancelled; a
RunSignal resolves the futures a step races it with (engine/runtime/steps.py `_call`)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from engine import connect, job
from engine.clock import FakeClock, SystemClock
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.jobs import Registry
from engine.runtime.signal import RunSignal
from engine.runtime.worker import Worker


@job(name="timers.tick", queue="timers", idempotency_key=lambda inp: str(inp["n"]), timeout=5)
async def tick(ctx: Any, inp: dict[str, Any]) -> None:
    return None


async def test_the_system_clock_calls_a_timer_once_its_time_has_passed_and_never_a_cancelled_one() -> None:
    fired: list[str] = []
    last = asyncio.Event()
    dropped = SystemClock().call_later(0.01, lambda: fired.append("dropped"))
    SystemClock().call_later(0.0, lambda: fired.append("first"))
    SystemClock().call_later(0.02, lambda: (fired.append("last"), last.set()))
    dropped.cancel()
    await asyncio.wait_for(last.wait(), 5)
    assert fired == ["first", "last"]


async def test_the_fake_clock_calls_a_timer_when_advanced_past_it_and_never_a_cancelled_one() -> None:
    clock = FakeClock()
    fired: list[str] = []
    landed = asyncio.Event()
    clock.call_later(10, lambda: (fired.append("due"), landed.set()))
    dropped = clock.call_later(5, lambda: fired.append("dropped"))
    dropped.cancel()
    clock.advance(9.9)
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert fired == []  # not due yet, and the cancelled one is not called when its time passes
    clock.advance(0.1)
    await asyncio.wait_for(landed.wait(), 5)
    assert fired == ["due"]


async def test_a_run_signal_resolves_each_future_it_holds_with_its_reason_and_none_it_let_go() -> None:
    loop = asyncio.get_running_loop()
    signal = RunSignal()
    held, let_go, late = loop.create_future(), loop.create_future(), loop.create_future()
    signal.resolve(held)
    signal.resolve(let_go)
    signal.forget(let_go)
    signal.abort("drain")
    signal.abort("timeout")  # the first reason stands
    signal.resolve(late)  # held after the abort: resolved at once
    assert (held.result(), late.result(), let_go.done()) == ("drain", "drain", False)


class _OwnClock:
    """An application's own clock, written to the protocol as it was before call_later."""

    def now(self) -> datetime:
        return datetime(2026, 1, 1, tzinfo=UTC)

    def monotonic(self) -> float:
        return 0.0

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(0)


def test_a_worker_refuses_a_clock_that_cannot_time_a_deadline_before_any_job_runs() -> None:
    eng = connect("memory://")
    with pytest.raises(JobsError) as err:
        Worker(eng.driver, Registry([tick]), clock=_OwnClock())  # type: ignore[arg-type]
    assert err.value.code == X_INVALID_ARGUMENT
    assert "call_later" in err.value.cause and "SystemClock" in err.value.fix


async def test_a_run_signals_waiters_wake_with_its_reason_and_one_after_the_abort_at_once() -> None:
    signal = RunSignal()
    waiting = asyncio.ensure_future(signal.wait())
    await asyncio.sleep(0)  # the waiter is registered
    signal.abort("cancelled")
    assert await asyncio.wait_for(waiting, 5) == "cancelled"
    assert await asyncio.wait_for(signal.wait(), 5) == "cancelled"
