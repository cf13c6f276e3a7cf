"""One claimed run, settled: settle failures (I6), ceilings forwarded in one place (I11),
abandonment (I10), lease loss only when real (I13), suspension, drain (I14), metrics (I24)."""

from __future__ import annotations

import asyncio
import logging
import threading
import urllib.request
from datetime import timedelta
from typing import Any

import pytest

from engine.api import Engine
from engine.clock import FakeClock
from engine.drivers.memory import MemoryDriver
from engine.errors import X_TIMEOUT
from engine.ids import IdFactory
from engine.jobs import job
from engine.retry import RetryPolicy
from engine.runtime import execute as execute_mod
from engine.runtime.leases import LeaseKeeper
from engine.runtime.metrics import Metrics, serve_metrics
from engine.runtime.suspend import StepSuspension
from engine.types import Claim, JobState, Renewal
from tests.engine.test_worker import GATE, Q, gate, next_of, running

logging.getLogger("jobs").setLevel(logging.DEBUG)


@job(name="x.ok", queue=Q, idempotency_key=lambda inp: str(inp["n"]), step_timeout=7, event_poll=3, timeout=40)
async def ok(ctx, inp):  # type: ignore[no-untyped-def]
    return {"ok": inp["n"], "steps": len(ctx.step.reached)}


@job(name="x.fails", queue=Q, idempotency_key=lambda inp: str(inp["n"]), retry=RetryPolicy(attempts=3, delay=1))
async def fails(ctx, inp):  # type: ignore[no-untyped-def]
    raise ValueError("nope")


@job(name="x.sleeps", queue=Q, idempotency_key=lambda inp: str(inp["n"]))
async def sleeps(ctx, inp):  # type: ignore[no-untyped-def]
    raise StepSuspension(run_at=ctx.step.clock.now() + timedelta(days=1), wait={"kind": "sleep", "step": "nap"})


@job(
    name="x.slowpoke",
    queue=Q,
    idempotency_key=lambda inp: str(inp["n"]),
    timeout=30,
    retry=RetryPolicy(attempts=2, delay=60),
)
async def slowpoke(ctx, inp):  # type: ignore[no-untyped-def]
    gate("slowpoke").set()
    await asyncio.Event().wait()


STUCK = threading.Event()
STARTED = threading.Event()


@job(name="x.stubborn", queue=Q, idempotency_key=lambda inp: str(inp["n"]), timeout=5)
def stubborn(ctx, inp):  # type: ignore[no-untyped-def]
    STARTED.set()
    STUCK.wait(10)  # a sync body that never reads ctx.signal
    return "late"


@job(name="x.held", queue=Q, idempotency_key=lambda inp: str(inp["n"]))
async def held(ctx, inp):  # type: ignore[no-untyped-def]
    gate(f"held-{inp['n']}").set()
    await gate("held-release").wait()
    return inp["n"]


@pytest.fixture
def mem() -> MemoryDriver:
    return MemoryDriver()


@pytest.fixture
def eng(mem: MemoryDriver, clock: FakeClock) -> Engine:
    return Engine(mem, clock=clock, ids=IdFactory(clock, seed=5))


def events(caplog: pytest.LogCaptureFixture, name: str) -> list[dict[str, Any]]:
    return [r.fields for r in caplog.records if r.getMessage() == name]  # type: ignore[attr-defined]


async def test_i6_an_ack_that_fails_is_a_settle_failure_not_a_job_failure(
    mem: MemoryDriver, clock: FakeClock, eng: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken_ack(**kw: Any) -> Any:
        raise ValueError("the ack statement failed")

    nacks: list[Any] = []
    real_nack = mem.job_nack

    async def spy_nack(**kw: Any) -> Any:
        nacks.append(kw["nack"])
        return await real_nack(**kw)

    mem.job_ack_many = broken_ack  # type: ignore[method-assign]
    mem.job_nack = spy_nack  # type: ignore[method-assign]
    async with running(mem, clock, ok) as (w, seen):
        r = await eng.aenqueue(ok, {"n": 1})
        done = await next_of(seen)
        assert done.outcome == "settle-failed"
        assert w.keeper.leases == {}  # no longer renewed: the lease lapses and the row is re-delivered
    assert nacks == []  # completed work is never nacked
    assert [e["job_id"] for e in events(caplog, "jobs.worker.settle-failed")] == [r.id]
    assert events(caplog, "jobs.attempt.failed") == []
    assert w.metrics.count(Q, "retried") == w.metrics.count(Q, "dead") == w.metrics.count(Q, "completed") == 0
    assert (await eng.aget(r.id)).state is JobState.RUNNING


async def test_i6_a_nack_that_fails_is_a_settle_failure_too(
    mem: MemoryDriver, clock: FakeClock, eng: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken_nack(**kw: Any) -> Any:
        raise ValueError("the nack statement failed")

    mem.job_nack = broken_nack  # type: ignore[method-assign]
    async with running(mem, clock, fails) as (w, seen):
        await eng.aenqueue(fails, {"n": 1})
        assert (await next_of(seen)).outcome == "settle-failed"
    assert len(events(caplog, "jobs.worker.settle-failed")) == 1
    assert w.metrics.count(Q, "retried") == 0


async def test_i11_ceilings_are_forwarded_from_the_declaration_in_one_place(
    mem: MemoryDriver, clock: FakeClock, eng: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[dict[str, Any]] = []
    real = execute_mod.StepApi

    def recording(**kw: Any) -> Any:
        built.append(kw)
        return real(**kw)

    monkeypatch.setattr(execute_mod, "StepApi", recording)
    async with running(mem, clock, ok) as (w, seen):
        await eng.aenqueue(ok, {"n": 1})
        assert (await next_of(seen)).outcome == "completed"
    (kw,) = built
    assert (kw["step_timeout"], kw["event_poll"]) == (7.0, 3.0)
    assert set(kw) == {
        "driver",
        "claim",
        "row",
        "clock",
        "signal",
        "step_timeout",
        "event_poll",
        "loop",
        "tracing",
        "engine",
    }
    assert kw["loop"] is asyncio.get_running_loop()  # a sync handler's thread hands its steps to it


async def test_the_step_runner_is_built_only_for_a_run_that_takes_a_step(
    mem: MemoryDriver, clock: FakeClock, eng: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[str] = []
    real = execute_mod.StepApi

    def recording(**kw: Any) -> Any:
        built.append(kw["row"].name)
        return real(**kw)

    monkeypatch.setattr(execute_mod, "StepApi", recording)
    async with running(mem, clock, ok, fails) as (w, seen):
        await eng.aenqueue(fails, {"n": 1})
        await eng.aenqueue(ok, {"n": 2})
        assert sorted(e.outcome for e in (await next_of(seen), await next_of(seen))) == ["completed", "retried"]
    assert built == ["x.ok"]


async def test_i11_timeout_bounds_the_attempt(mem: MemoryDriver, clock: FakeClock, eng: Engine) -> None:
    async with running(mem, clock, slowpoke) as (w, seen):
        r = await eng.aenqueue(slowpoke, {"n": 1})
        await gate("slowpoke").wait()
        clock.advance(30)
        done = await next_of(seen)
    assert (done.outcome, done.error_code, done.abort_reason) == ("retried", X_TIMEOUT, "timeout")
    row = await eng.aget(r.id)
    assert row.state is JobState.DELAYED and row.error_code == X_TIMEOUT and row.attempt == 1


async def test_i10_a_body_that_ignores_the_signal_is_logged_as_abandoned(
    mem: MemoryDriver, clock: FakeClock, eng: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    STUCK.clear()
    STARTED.clear()
    async with running(mem, clock, stubborn) as (w, seen):
        r = await eng.aenqueue(stubborn, {"n": 1})
        await asyncio.to_thread(STARTED.wait, 10)  # the run's deadline was armed before the body started
        await asyncio.sleep(0)
        clock.advance(5)
        done = await next_of(seen)
        assert (done.outcome, done.error_code, done.abort_reason) == ("retried", X_TIMEOUT, "timeout")
        STUCK.set()  # the body returns long after the run was given up
        w._executor.shutdown(wait=True)
    assert [e["job_id"] for e in events(caplog, "jobs.timeout.abandoned")] == [r.id]
    assert (await eng.aget(r.id)).result is None  # its late result was never written


async def test_i7_a_suspension_parks_without_an_attempt_or_an_error_log(
    mem: MemoryDriver, clock: FakeClock, eng: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    async with running(mem, clock, sleeps) as (w, seen):
        r = await eng.aenqueue(sleeps, {"n": 1})
        assert (await next_of(seen)).outcome == "suspended"
    row = await eng.aget(r.id)
    assert (row.state, row.attempt, row.last_error) == (JobState.SUSPENDED, 0, None)
    assert not [rec for rec in caplog.records if rec.levelno >= logging.WARNING]


async def test_i13_a_renewal_answered_after_the_job_settled_is_not_a_loss(
    mem: MemoryDriver, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    metrics = Metrics()
    keeper = LeaseKeeper(mem, clock, worker="w1", lease_seconds=30, interval=10, metrics=metrics)
    on_wire = asyncio.Event()
    answer = asyncio.Event()

    async def slow_renew(**kw: Any) -> list[Renewal]:
        on_wire.set()
        await answer.wait()
        return [Renewal(c, "lost") for c in kw["claims"]]  # the ack moved the row out of running

    mem.job_renew_many = slow_renew  # type: ignore[method-assign]
    lease = keeper.hold(Claim("j1", "w1", 1), Q, "x.ok")
    aborted: list[str] = []
    lease.abort = aborted.append
    renewing = asyncio.ensure_future(keeper.renew_once())
    await on_wire.wait()
    keeper.release(lease)  # the job settled while the renewal was on the wire
    answer.set()
    await renewing
    assert aborted == [] and events(caplog, "jobs.lease.lost") == []
    assert metrics.registry.get_sample_value("lease_lost_total", {"queue": Q}) is None


async def test_i13_a_real_loss_is_reported_once_and_stops_the_run(
    mem: MemoryDriver, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    metrics = Metrics()
    keeper = LeaseKeeper(mem, clock, worker="w1", lease_seconds=30, interval=10, metrics=metrics)

    async def lost(**kw: Any) -> list[Renewal]:
        return [Renewal(c, "lost") for c in kw["claims"]]

    mem.job_renew_many = lost  # type: ignore[method-assign]
    lease = keeper.hold(Claim("j1", "w1", 1), Q, "x.ok")
    aborted: list[str] = []
    lease.abort = aborted.append
    await keeper.renew_once()
    await keeper.renew_once()
    assert aborted == ["lease-lost"] and len(events(caplog, "jobs.lease.lost")) == 1
    assert metrics.registry.get_sample_value("lease_lost_total", {"queue": Q}) == 1.0


async def test_i13_the_lease_is_measured_from_the_last_renewal_that_landed(
    mem: MemoryDriver, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    keeper = LeaseKeeper(mem, clock, worker="w1", lease_seconds=30, interval=10, metrics=Metrics())
    calls = 0

    async def hangs_up(**kw: Any) -> list[Renewal]:
        nonlocal calls
        calls += 1
        if calls == 1:
            return [Renewal(c, "ok") for c in kw["claims"]]
        raise ConnectionError("the database went away")

    mem.job_renew_many = hangs_up  # type: ignore[method-assign]
    lease = keeper.hold(Claim("j1", "w1", 1), Q, "x.ok")
    aborted: list[str] = []
    lease.abort = aborted.append
    clock.advance(10)
    await keeper.renew_once()  # lands at t=10
    clock.advance(29)
    await keeper.renew_once()  # fails at t=39: still within 30 s of the last landing
    assert aborted == []
    clock.advance(1)
    await keeper.renew_once()  # t=40: 30 s since the last renewal landed
    assert aborted == ["lease-lost"] and len(events(caplog, "jobs.lease.lost")) == 1


async def test_i14_drain_lets_work_finish_within_grace_then_releases_the_rest(
    mem: MemoryDriver, clock: FakeClock, eng: Engine
) -> None:
    async with running(mem, clock, held, ok, concurrency=2, grace=10.0) as (w, seen):
        a = await eng.aenqueue(held, {"n": 1})
        b = await eng.aenqueue(held, {"n": 2})
        await gate("held-1").wait()
        await gate("held-2").wait()
        background = list(w._tasks)
        armed = clock.sleepers
        draining = asyncio.ensure_future(w.drain())
        while clock.sleepers <= armed:  # the drain's grace timer is armed on the fake clock
            await asyncio.sleep(0)
        c = await eng.aenqueue(ok, {"n": 3})  # arrives during the drain: never claimed
        clock.advance(10)
        await draining
        outcomes = sorted([(await next_of(seen)).outcome for _ in range(2)])
    assert outcomes == ["released", "released"]
    for r in (a, b):
        row = await eng.aget(r.id)
        assert (row.state, row.attempt, row.claimed_by) == (JobState.READY, 0, w.id)
    assert (await eng.aget(c.id)).state is JobState.READY
    assert all(t.done() for t in background)  # every background loop awaited (I14)
    assert await mem.worker_list(now=clock.now()) == []
    assert GATE["held-release"].is_set() is False


async def test_i14_drain_flushes_buffered_acks(mem: MemoryDriver, clock: FakeClock, eng: Engine) -> None:
    async with running(mem, clock, ok, flush_interval=3600.0, ack_batch=1000) as (w, seen):
        r = await eng.aenqueue(ok, {"n": 1})
        while len(w.acks) == 0:
            await asyncio.sleep(0)
        assert (await eng.aget(r.id)).state is JobState.RUNNING  # buffered, not yet acked
    assert (await next_of(seen)).outcome == "completed"
    assert (await eng.aget(r.id)).state is JobState.COMPLETED


async def test_i24_metrics_are_exposed_on_loopback(mem: MemoryDriver, clock: FakeClock, eng: Engine) -> None:
    async with running(mem, clock, ok, fails) as (w, seen):
        await eng.aenqueue(ok, {"n": 1})
        await eng.aenqueue(fails, {"n": 2})
        await next_of(seen)
        await next_of(seen)
        w.metrics.set_gauges(await mem.queue_gauges(now=clock.now()))
    server = serve_metrics(w.metrics, 0)
    try:
        host, port = server.server_address[:2]  # type: ignore[attr-defined]
        assert host == "127.0.0.1"
        text = await asyncio.to_thread(
            lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
        )
    finally:
        server.shutdown()  # type: ignore[attr-defined]
    assert 'jobs_total{outcome="completed",queue="wq"} 1.0' in text
    assert 'jobs_total{outcome="retried",queue="wq"} 1.0' in text
    for name in (
        "queue_depth",
        "queue_oldest_ready_seconds",
        "queue_dead_jobs",
        "lease_lost_total",
        "job_duration_seconds_bucket",
    ):
        assert name in text
