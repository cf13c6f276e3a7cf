"""The live demo keeps every state the console explains present all the time, not only in its
first seconds: a job limited by a rate limit and one by a concurrency limit (parked), one sleeping
and one waiting for its event (suspended), and failures arriving (retried or dead), so a new user
can try each why-screen at any moment.

Simulated: the demo's own workers (Demo._workers) and traffic (Demo.beat, Traffic) run on the
memory driver with a FakeClock, and the pretend work waits on that clock, so five minutes of the
demo take a second or two and come out the same every run.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import pytest

from console.demo import jobs as demo_jobs
from console.demo.app import TICK, Demo
from console.demo.traffic import Traffic
from engine import FakeClock, connect
from engine.introspect import Introspector
from engine.projections import JobFilter
from engine.runtime.worker import Worker
from engine.types import JobState

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
WARMUP = 30.0  # seconds: the first burst has been worked through
SPAN = 300.0  # seconds of demo after the warm-up, every beat of them checked
WINDOW = 20.0  # seconds: some job fails (retried or dead) in every window this long
STEP = 0.25  # seconds the clock moves at a time


@pytest.fixture(autouse=True)
def pace_on_the_fake_clock() -> Iterator[None]:
    before = (demo_jobs.PACE.scale, demo_jobs.PACE.clock)
    yield
    demo_jobs.PACE.scale, demo_jobs.PACE.clock = before


class _Inline(ThreadPoolExecutor):
    """The loop's default executor, where the demo's sync step bodies run (asyncio.to_thread):
    here each runs at once on the loop's thread (they are pure functions of their input), so no
    thread's real time decides in which step of the clock its result lands."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        fut: Future[Any] = Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            fut.set_exception(exc)
        return fut


async def _run(clock: FakeClock, seconds: float, workers: list[Worker]) -> None:
    """Move the clock in small steps, letting the workers run everything each step made due:
    the memory driver does no I/O, so a few hundred turns of the loop settle it. The completions
    each step made are acked before the next (the ack buffer's batching window is real time, and
    a completion's ack landing in one step or the next decides whether the next enqueue of its
    key dedupes against it)."""
    for _ in range(round(seconds / STEP)):
        clock.advance(STEP)
        for _ in range(2):  # once more after the acks: what they freed or woke runs in this step
            for _ in range(200):
                await asyncio.sleep(0)
            for w in workers:
                await w.acks.settle()


async def _present(eng, intro: Introspector) -> set[str]:  # type: ignore[no-untyped-def]
    """The explained states present now, by the reason a why-screen gives for them."""
    found = set()
    for state in (JobState.PARKED, JobState.SUSPENDED):
        page = await intro.jobs(JobFilter(state=state), limit=200)
        for j in page.items:
            wait = (await eng.aget(j.id)).wait or {}
            found.add(f"{state.value}:{wait.get('limit') or wait.get('kind')}")
    return found


async def test_every_explained_state_is_present_at_every_beat_of_the_demo() -> None:
    clock = FakeClock(START)
    eng = connect("memory://", clock=clock)
    asyncio.get_running_loop().set_default_executor(_Inline(max_workers=1))
    demo_jobs.PACE.scale, demo_jobs.PACE.clock = 1.0, clock
    failures: list[float] = []
    demo = Demo(force_memory=True, world=False, on_execution=lambda ex: _failed(ex, clock, failures))
    traffic = Traffic(seed=demo.seed)
    wanted = {"parked:rate", "parked:concurrency", "suspended:sleep", "suspended:event"}
    missing: list[tuple[float, set[str]]] = []
    intro = Introspector(eng)
    fleet = demo._workers(eng)
    workers = contextlib.AsyncExitStack()
    for worker in fleet:
        await workers.enter_async_context(worker)
    try:
        await eng.aenqueue_many(traffic.first_burst(clock.now()))
        elapsed = 0.0
        while elapsed < WARMUP + SPAN:
            await demo.beat(eng, traffic)
            await _run(clock, TICK, fleet)
            elapsed += TICK
            if elapsed >= WARMUP:
                present = await _present(eng, intro)
                if not wanted <= present:
                    missing.append((elapsed, wanted - present))
    finally:
        closing = asyncio.create_task(workers.aclose())  # the drain waits out its grace on the clock
        while not closing.done():
            await _run(clock, 1.0, fleet)
        await closing
    assert not missing, f"states missing at (seconds, states): {missing[:10]}"
    windows = [(t, t + WINDOW) for t in range(int(WARMUP), int(WARMUP + SPAN - WINDOW), int(WINDOW))]
    quiet = [w for w in windows if not any(w[0] <= f < w[1] for f in failures)]
    assert not quiet, f"no failure in the windows {quiet}"


def _failed(ex, clock: FakeClock, failures: list[float]) -> None:  # type: ignore[no-untyped-def]
    if ex.outcome in ("retried", "dead"):
        failures.append((clock.now() - START).total_seconds())
