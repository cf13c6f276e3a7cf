"""Durable steps end to end, on every driver: declared jobs run by the real Worker (and so by
engine/runtime/execute.py, the one place step_timeout and event_poll are forwarded, I11) on a
fake clock. Each test awaits the worker's executions; none sleeps for a condition."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

from engine import Engine, FakeClock, JobState, RetryPolicy, job
from engine.drivers.base import Driver
from engine.errors import X_STEP_TIMEOUT
from engine.ids import IdFactory
from engine.jobs import JobDefinition, Registry
from engine.runtime.execute import Execution
from engine.runtime.worker import Worker, WorkerConfig

QUEUE = "steps-e2e"
CALLS: Counter[str] = Counter()
GATES: dict[str, asyncio.Event] = {}


def _count(name: str, fail_until: int = 0) -> Any:
    def work() -> str:
        CALLS[name] += 1
        if CALLS[name] <= fail_until:
            raise RuntimeError(f"{name} failed (call {CALLS[name]})")
        return f"{name}#{CALLS[name]}"

    return work


@job(
    name="e2e.flaky_third",
    queue=QUEUE,
    idempotency_key=lambda inp: inp["k"],
    retry=RetryPolicy(attempts=3, backoff="fixed", delay=0),
)
async def flaky_third(ctx, inp):  # type: ignore[no-untyped-def]
    a = await ctx.step.run("one", _count("one"))
    b = await ctx.step.run("two", _count("two"))
    c = await ctx.step.run("three", _count("three", fail_until=2))
    return [a, b, c]


@job(name="e2e.sleeper", queue=QUEUE, idempotency_key=lambda inp: inp["k"])
async def sleeper(ctx, inp):  # type: ignore[no-untyped-def]
    await ctx.step.run("before", _count("before"))
    await ctx.step.sleep("three-days", 3 * 86400)
    return await ctx.step.run("after", _count("after"))


@job(name="e2e.approval", queue=QUEUE, idempotency_key=lambda inp: inp["k"], event_poll=3600)
async def approval(ctx, inp):  # type: ignore[no-untyped-def]
    await ctx.step.run("create", _count("create"))
    got = await ctx.step.wait_for_event("approved", event="ws.approved", match={"ws": inp["ws"]}, timeout=86400)
    return {"by": got["by"]}


@job(
    name="e2e.slow_step",
    queue=QUEUE,
    idempotency_key=lambda inp: inp["k"],
    step_timeout=5,
    retry=RetryPolicy(attempts=2, backoff="fixed", delay=60),
)
async def slow_step(ctx, inp):  # type: ignore[no-untyped-def]
    async def hangs() -> None:
        GATES["slow-started"].set()
        await asyncio.Event().wait()

    return await ctx.step.run("hangs", hangs)


@job(name="e2e.cancelled", queue=QUEUE, idempotency_key=lambda inp: inp["k"])
async def cancelled(ctx, inp):  # type: ignore[no-untyped-def]
    await ctx.step.run("first", _count("first"))

    async def long() -> str:
        GATES["long-started"].set()
        await asyncio.Event().wait()
        return "never"

    await ctx.step.run("long", long)
    return await ctx.step.run("after-cancel", _count("after-cancel"))


@job(name="e2e.sync_handler", queue=QUEUE, idempotency_key=lambda inp: inp["k"])
def sync_handler(ctx, inp):  # type: ignore[no-untyped-def]
    # A plain handler runs in a thread: its step calls block it and answer values, no await.
    a = ctx.step.run("one", _count("one"))
    ctx.step.sleep("nap", 60)
    return [a, ctx.step.run("two", _count("two"))]


@asynccontextmanager
async def worker(driver: Driver, clock: FakeClock, *jobs: JobDefinition) -> AsyncIterator[asyncio.Queue[Execution]]:
    CALLS.clear()
    GATES.clear()
    GATES.update({"slow-started": asyncio.Event(), "long-started": asyncio.Event()})
    seen: asyncio.Queue[Execution] = asyncio.Queue()
    cfg = WorkerConfig(queues=(QUEUE,), concurrency=4, lease_seconds=30, poll_interval=1.0, grace=1.0)
    async with Worker(driver, Registry(jobs), config=cfg, clock=clock, on_execution=seen.put_nowait):
        yield seen


async def settled(seen: asyncio.Queue[Execution], driver: Driver | None = None) -> Execution:
    """The worker's next execution. The worker's own fallback for a missed wake-up is its poll
    interval, which a fake clock never lets pass; under heavy load a wake-up can be missed (seen
    about once in ten loaded runs on Postgres), so after 5 s the test NOTIFYs the queue the way
    the poll would have looked again. Never the expected path: 20 s in all is a failure."""
    try:
        return await asyncio.wait_for(seen.get(), timeout=5)
    except TimeoutError:
        if driver is None:
            raise
    await driver.queue_notify(queues=[QUEUE])
    return await asyncio.wait_for(seen.get(), timeout=15)


def engine(driver: Driver, clock: FakeClock) -> Engine:
    return Engine(driver, clock=clock, ids=IdFactory(clock, seed=11))


async def test_i9_e2e_third_step_fails_twice_then_succeeds_steps_one_and_two_ran_once(
    driver: Driver, clock: FakeClock
) -> None:
    eng = engine(driver, clock)
    async with worker(driver, clock, flaky_third) as seen:
        r = await eng.aenqueue(flaky_third, {"k": "a"})
        outcomes = [(await settled(seen, driver)).outcome for _ in range(3)]
    assert outcomes == ["retried", "retried", "completed"]
    assert CALLS == Counter({"one": 1, "two": 1, "three": 3})
    row = await eng.aget(r.id)
    assert (row.state, row.result, row.attempt) == (JobState.COMPLETED, ["one#1", "two#1", "three#3"], 3)


async def test_i7_e2e_a_three_day_sleep_is_suspended_then_resumes_when_the_clock_passes(
    driver: Driver, clock: FakeClock
) -> None:
    eng = engine(driver, clock)
    async with worker(driver, clock, sleeper) as seen:
        r = await eng.aenqueue(sleeper, {"k": "s"})
        first = await settled(seen, driver)
        assert first.outcome == "suspended"
        row = await eng.aget(r.id)
        assert (row.state, row.attempt, row.last_error) == (JobState.SUSPENDED, 0, None)
        assert row.wait is not None and row.wait["kind"] == "sleep" and row.run_at == clock.now() + timedelta(days=3)
        clock.advance(3 * 86400)
        # The idle claim loop may have armed its fake-clock sleep after the advance (its next-due
        # read is real I/O), so wake it the way new work would; the claim itself reads the clock.
        await driver.queue_notify(queues=[QUEUE])
        done = await settled(seen, driver)
    assert done.outcome == "completed"
    assert CALLS == Counter({"before": 1, "after": 1})
    row = await eng.aget(r.id)
    assert (row.state, row.result, row.attempt) == (JobState.COMPLETED, "after#1", 1)


async def test_i7_e2e_send_event_wakes_a_suspended_wait_without_the_clock_moving(
    driver: Driver, clock: FakeClock
) -> None:
    eng = engine(driver, clock)
    async with worker(driver, clock, approval) as seen:
        r = await eng.aenqueue(approval, {"k": "w", "ws": 7})
        assert (await settled(seen, driver)).outcome == "suspended"
        row = await eng.aget(r.id)
        assert row.run_at == clock.now() + timedelta(seconds=3600)  # the declared event_poll bound
        sent = await eng.asend_event("ws.approved", {"ws": 7, "by": "ann"})
        assert sent.woken == 1
        done = await settled(seen, driver)  # woken by NOTIFY: the fake clock never moved
    assert done.outcome == "completed"
    assert (await eng.aget(r.id)).result == {"by": "ann"} and CALLS == Counter({"create": 1})


async def test_i7_e2e_an_event_sent_before_the_job_reaches_its_wait_is_consumed(
    driver: Driver, clock: FakeClock
) -> None:
    eng = engine(driver, clock)
    r = await eng.aenqueue(approval, {"k": "early", "ws": 9})
    clock.advance(1)
    await eng.asend_event("ws.approved", {"ws": 9, "by": "bob"})
    async with worker(driver, clock, approval) as seen:
        done = await settled(seen, driver)
    assert done.outcome == "completed" and (await eng.aget(r.id)).result == {"by": "bob"}


async def test_i11_e2e_the_declared_step_timeout_reaches_the_step(driver: Driver, clock: FakeClock) -> None:
    eng = engine(driver, clock)
    async with worker(driver, clock, slow_step) as seen:
        r = await eng.aenqueue(slow_step, {"k": "t"})
        await GATES["slow-started"].wait()
        clock.advance(5)
        out = await settled(seen, driver)
    assert (out.outcome, out.error_code) == ("retried", X_STEP_TIMEOUT)
    (step,) = await driver.step_list(job_id=r.id)
    assert (step.name, step.status) == ("hangs", "failed") and step.error and step.error.startswith(X_STEP_TIMEOUT)


async def test_i10_e2e_a_cancelled_run_writes_no_step_after_the_cancel(driver: Driver, clock: FakeClock) -> None:
    eng = engine(driver, clock)
    async with worker(driver, clock, cancelled) as seen:
        r = await eng.aenqueue(cancelled, {"k": "c"})
        await GATES["long-started"].wait()
        await eng.acancel(r.id, actor="ops")
        # A lease renewal (every 10 s of the fake clock) sees the cancel and aborts the run's
        # signal. Under load the renewal loop can be mid-statement when the clock moves, so tick
        # until the run reports, bounded well inside the 30 s lease.
        out = None
        for _ in range(2):
            clock.advance(10)
            try:
                out = await asyncio.wait_for(seen.get(), timeout=5)
                break
            except TimeoutError:
                continue
        assert out is not None, "no lease renewal saw the cancel"

    assert out.outcome == "cancelled"
    assert [s.name for s in await driver.step_list(job_id=r.id)] == ["first"]
    assert CALLS == Counter({"first": 1})
    assert (await eng.aget(r.id)).state is JobState.CANCELLED


async def test_i9_e2e_a_sync_handler_uses_the_same_steps_without_await(driver: Driver, clock: FakeClock) -> None:
    eng = engine(driver, clock)
    async with worker(driver, clock, sync_handler) as seen:
        r = await eng.aenqueue(sync_handler, {"k": "sync"})
        assert (await settled(seen, driver)).outcome == "suspended"  # the suspension crossed the thread
        clock.advance(60)
        await driver.queue_notify(queues=[QUEUE])
        done = await settled(seen, driver)
    assert done.outcome == "completed" and (await eng.aget(r.id)).result == ["one#1", "two#1"]
    assert CALLS == Counter({"one": 1, "two": 1})
