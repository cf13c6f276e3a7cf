"""The worker on the memory driver and the fake clock: slots, wake-ups, leases, limits, drain.

Every wait is on something the worker reports (its execution callback, an event a handler sets,
the fake clock's sleepers); none sleeps for a condition.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import pytest

from engine.api import Engine
from engine.clock import FakeClock
from engine.drivers.memory import MemoryDriver
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.ids import IdFactory
from engine.jobs import JobDefinition, RateLimit, Registry, job
from engine.retry import RetryPolicy
from engine.runtime.execute import Execution
from engine.runtime.worker import Worker, WorkerConfig
from engine.types import Ack, JobState

Q = "wq"
GATE: dict[str, asyncio.Event] = {}
RUNS: list[str] = []


def gate(name: str) -> asyncio.Event:
    return GATE.setdefault(name, asyncio.Event())


@job(name="w.fast", queue=Q, idempotency_key=lambda inp: str(inp["n"]))
async def fast(ctx, inp):  # type: ignore[no-untyped-def]
    RUNS.append(f"fast:{inp['n']}")
    return {"n": inp["n"]}


@job(name="w.slow", queue=Q, idempotency_key=lambda inp: str(inp["n"]))
async def slow(ctx, inp):  # type: ignore[no-untyped-def]
    gate("slow-started").set()
    await gate("slow-release").wait()
    return "slow"


@job(name="w.limited", queue=Q, idempotency_key=lambda inp: str(inp["n"]), concurrency=1)
async def limited(ctx, inp):  # type: ignore[no-untyped-def]
    gate(f"limited-{inp['n']}").set()
    await gate("limited-release").wait()
    return inp["n"]


@job(
    name="w.rated",
    queue=Q,
    idempotency_key=lambda inp: str(inp["n"]),
    rate_limit=RateLimit(limit=1, per=10.0, key=lambda inp, tenant: tenant or "-"),
)
async def rated(ctx, inp):  # type: ignore[no-untyped-def]
    return inp["n"]


@job(
    name="w.boom",
    queue=Q,
    idempotency_key=lambda inp: str(inp["n"]),
    retry=RetryPolicy(attempts=3, delay=5, backoff="fixed"),
)
async def boom(ctx, inp):  # type: ignore[no-untyped-def]
    raise RuntimeError("boom")


@job(name="w.hang", queue=Q, idempotency_key=lambda inp: str(inp["n"]))
async def hang(ctx, inp):  # type: ignore[no-untyped-def]
    gate("hang-started").set()
    try:
        await asyncio.Event().wait()
    finally:
        gate("hang-stopped").set()


@job(name="w.elsewhere", queue="elsewhere", idempotency_key=lambda inp: str(inp["n"]))
async def elsewhere(ctx, inp):  # type: ignore[no-untyped-def]
    pass


def cfg(**kw: Any) -> WorkerConfig:
    base: dict[str, Any] = dict(
        queues=(Q,), concurrency=4, lease_seconds=30, poll_interval=5.0, grace=10.0, flush_interval=0.001
    )
    base.update(kw)
    return WorkerConfig(**base)


@asynccontextmanager
async def running(
    driver: MemoryDriver, clock: FakeClock, *jobs: JobDefinition, **kw: Any
) -> AsyncIterator[tuple[Worker, asyncio.Queue[Execution]]]:
    GATE.clear()
    RUNS.clear()
    seen: asyncio.Queue[Execution] = asyncio.Queue()
    w = Worker(driver, Registry(jobs), config=cfg(**kw), clock=clock, on_execution=seen.put_nowait)
    async with w:
        yield w, seen


async def next_of(seen: asyncio.Queue[Execution]) -> Execution:
    return await asyncio.wait_for(seen.get(), timeout=10)  # a safety net, never the expected path


@pytest.fixture
def mem() -> MemoryDriver:
    return MemoryDriver()


@pytest.fixture
def eng(mem: MemoryDriver, clock: FakeClock) -> Engine:
    return Engine(mem, clock=clock, ids=IdFactory(clock, seed=3))


async def test_i12_each_slot_rearms_when_its_own_job_settles(mem: MemoryDriver, clock: FakeClock, eng: Engine) -> None:
    async with running(mem, clock, fast, slow, concurrency=2) as (w, seen):
        await eng.aenqueue(slow, {"n": 0})
        await gate("slow-started").wait()
        for n in range(6):  # one slot is held by the slow job; the other takes all six in turn
            await eng.aenqueue(fast, {"n": n})
        done = [await next_of(seen) for _ in range(6)]
        assert {e.outcome for e in done} == {"completed"} and sorted(RUNS) == [f"fast:{n}" for n in range(6)]
        assert w.in_use == 1  # the slow job still runs
        gate("slow-release").set()
        assert (await next_of(seen)).name == "w.slow"


async def test_a_delayed_job_is_claimed_at_its_time_without_a_busy_loop(
    mem: MemoryDriver, clock: FakeClock, eng: Engine
) -> None:
    claims = 0
    real_claim = mem.worker_claim

    async def counting(**kw: Any) -> Any:
        nonlocal claims
        claims += 1
        return await real_claim(**kw)

    mem.worker_claim = counting  # type: ignore[method-assign]
    async with running(mem, clock, fast, poll_interval=60.0) as (w, seen):
        r = await eng.aenqueue(fast, {"n": 1}, delay=10)
        for _ in range(50):  # the idle loop reads the next due time and sleeps on the clock until it
            await asyncio.sleep(0)
        before = claims
        assert before <= 3  # a claim at start, one after the enqueue's wake-up: no spinning
        clock.advance(10)
        done = await next_of(seen)
    assert done.job_id == r.id and done.outcome == "completed"
    assert claims <= before + 2


async def test_i5_a_failure_publishes_its_stop_reason_on_the_log_and_the_execution(
    mem: MemoryDriver, clock: FakeClock, eng: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobs")
    async with running(mem, clock, boom) as (w, seen):
        r = await eng.aenqueue(boom, {"n": 1})
        first = await next_of(seen)
        assert (first.outcome, first.stop_reason) == ("retried", None)
        row = await eng.aget(r.id)
        assert row.state is JobState.DELAYED and row.run_at == clock.now() + timedelta(seconds=5)
        clock.advance(5)
        second = await next_of(seen)
        clock.advance(5)
        third = await next_of(seen)
    assert (second.outcome, third.outcome, third.stop_reason) == ("retried", "dead", "attempts-exhausted")
    failed = [rec for rec in caplog.records if rec.getMessage() == "jobs.attempt.failed"]
    assert [rec.fields["stop"] for rec in failed] == [None, None, "attempts-exhausted"]  # type: ignore[attr-defined]
    row = await eng.aget(r.id)
    assert row.state is JobState.DEAD and "[stop: attempts-exhausted at attempt 3 of 3]" in (row.last_error or "")
    assert w.metrics.count(Q, "retried") == 2 and w.metrics.count(Q, "dead") == 1


async def test_i8_a_concurrency_shed_parks_without_an_attempt_or_an_error(
    mem: MemoryDriver, clock: FakeClock, eng: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobs")
    async with running(mem, clock, limited, shed_delay=2.0) as (w, seen):
        a = await eng.aenqueue(limited, {"n": 1})
        await gate("limited-1").wait()
        b = await eng.aenqueue(limited, {"n": 2})
        shed = await next_of(seen)
        assert (shed.job_id, shed.outcome) == (b.id, "parked")
        row = await eng.aget(b.id)
        assert (row.state, row.attempt, row.last_error, row.error_code) == (JobState.PARKED, 0, None, None)
        assert row.wait == {"kind": "limit", "limit": "concurrency", "key": "concurrency:w.limited"}
        (g,) = await mem.queue_gauges(now=clock.now())
        assert g.depth == 1  # the shed job still counts as waiting (I8)
        assert [rec.fields["job_id"] for rec in caplog.records if rec.getMessage() == "jobs.worker.shed"] == [b.id]  # type: ignore[attr-defined]
        gate("limited-release").set()
        assert (await next_of(seen)).job_id == a.id
        clock.advance(2)  # the parked row is due again and the slot is free now
        again = await next_of(seen)
    assert (again.job_id, again.outcome) == (b.id, "completed")
    assert (await eng.aget(b.id)).attempt == 1
    assert w.metrics.count(Q, "parked") == 1


async def test_i8_a_rate_limit_sheds_per_key(mem: MemoryDriver, clock: FakeClock, eng: Engine) -> None:
    async with running(mem, clock, rated) as (w, seen):
        await eng.aenqueue(rated, {"n": 1}, tenant="acme")
        assert (await next_of(seen)).outcome == "completed"
        await eng.aenqueue(rated, {"n": 2}, tenant="globex")  # another key: its own bucket
        assert (await next_of(seen)).outcome == "completed"
        r = await eng.aenqueue(rated, {"n": 3}, tenant="acme")
        shed = await next_of(seen)
        assert shed.outcome == "parked"
        row = await eng.aget(r.id)
        assert row.run_at == clock.now() + timedelta(seconds=10) and row.wait["limit"] == "rate"  # type: ignore[index]
        clock.advance(10)
        assert (await next_of(seen)).outcome == "completed"


async def test_cancel_reaches_the_running_handler_through_its_signal(
    mem: MemoryDriver, clock: FakeClock, eng: Engine
) -> None:
    async with running(mem, clock, hang, renew_interval=5.0) as (w, seen):
        r = await eng.aenqueue(hang, {"n": 1})
        await gate("hang-started").wait()
        await eng.acancel(r.id, actor="ops")
        clock.advance(5)  # the next renewal answers "cancelled" and aborts the run's signal
        done = await next_of(seen)
        assert gate("hang-stopped").is_set()
    assert (done.outcome, done.abort_reason) == ("cancelled", "cancelled")
    assert (await eng.aget(r.id)).state is JobState.CANCELLED
    assert w.metrics.count(Q, "cancelled") == 1


def test_worker_options_must_be_positive_and_finite() -> None:
    """An infinite lease would never lapse: a worker that dies would hold its jobs for ever."""
    for bad in (
        {"concurrency": 0},
        {"batch_size": -1},
        {"lease_seconds": 0},
        {"grace": -5},
        {"concurrency": True},
        {"lease_seconds": float("inf")},
        {"start_timeout": float("inf")},
    ):
        with pytest.raises(JobsError) as err:
            WorkerConfig(**bad)  # type: ignore[arg-type]
        assert err.value.code == X_INVALID_ARGUMENT and err.value.fix.startswith("jobsctl worker MODULE --")
    with pytest.raises(JobsError):
        WorkerConfig(lease_seconds=10, renew_interval=10)


def test_an_unknown_worker_option_names_the_nearest_one(mem: MemoryDriver) -> None:
    with pytest.raises(JobsError) as err:
        Engine(mem).worker([fast], concurency=4)
    assert err.value.code == X_INVALID_ARGUMENT and "did you mean 'concurrency'" in err.value.cause
    assert err.value.fix == "eng.worker(jobs, concurrency=...)"


def test_a_worker_with_no_jobs_is_refused(mem: MemoryDriver) -> None:
    with pytest.raises(JobsError) as err:
        Worker(mem, Registry())
    assert err.value.code == X_INVALID_ARGUMENT


async def test_the_embedded_worker_runs_inside_the_app_and_drains_on_exit(
    mem: MemoryDriver, clock: FakeClock, eng: Engine
) -> None:
    seen: asyncio.Queue[Execution] = asyncio.Queue()
    async with eng.worker([fast], queues=[Q], concurrency=2, on_execution=seen.put_nowait, flush_interval=0.001) as w:
        r = await eng.aenqueue(fast, {"n": 9})
        assert (await next_of(seen)).job_id == r.id
        assert [x.id for x in await mem.worker_list(now=clock.now())] == [w.id]
        assert w.maintenance is not None
    assert (await eng.aget(r.id)).state is JobState.COMPLETED
    assert await mem.worker_list(now=clock.now()) == []


async def test_maintenance_under_its_leader_rescues_a_lapsed_lease_and_prunes(
    mem: MemoryDriver, clock: FakeClock, eng: Engine
) -> None:
    from engine.services.maintenance import Maintenance, MaintenanceConfig

    lapsed = await eng.aenqueue(fast, {"n": 1})
    await mem.worker_claim(queues=[Q], limit=1, worker="gone", now=clock.now(), lease_seconds=30)
    done = await eng.aenqueue(fast, {"n": 2})
    (c,) = (await mem.worker_claim(queues=[Q], limit=1, worker="w", now=clock.now(), lease_seconds=30)).jobs
    await mem.job_ack_many(acks=[Ack(c.claim, None)], now=clock.now())
    leader = Maintenance(mem, clock, holder="m1", config=MaintenanceConfig(retention=60, dead_retention=120))
    other = Maintenance(mem, clock, holder="m2", config=MaintenanceConfig(retention=60, dead_retention=120))
    clock.advance(61)
    first = await leader.run_once()
    assert (first.leader, first.rescued, first.pruned) == (True, (lapsed.id,), 1)
    assert (await other.run_once()).leader is False  # one leader per fleet
    assert (await eng.aget(lapsed.id)).state is JobState.READY
    with pytest.raises(JobsError):
        await eng.aget(done.id)
    await leader.step_down()
    assert (await other.run_once()).term == 2  # handed over at once, under a new term


async def test_a_maintenance_pass_rolls_up_each_closed_minutes_completions_once(
    mem: MemoryDriver, clock: FakeClock, eng: Engine
) -> None:
    from engine.services.maintenance import Maintenance

    await eng.aenqueue(fast, {"n": 1})
    (c,) = (await mem.worker_claim(queues=[Q], limit=1, worker="w", now=clock.now(), lease_seconds=30)).jobs
    await mem.job_ack_many(acks=[Ack(c.claim, None)], now=clock.now())  # minute 12:00
    leader = Maintenance(mem, clock, holder="m1")
    assert (await leader.run_once()).rolled == 0  # 12:00 is under way
    clock.advance(80)  # 12:01:20: 12:00 closed 20 s ago, less than throughput_settle (30 s)
    assert (await leader.run_once()).rolled == 0
    clock.advance(20)  # 12:01:40: closed 40 s ago
    assert (await leader.run_once()).rolled == 1
    assert (await leader.run_once()).rolled == 0


async def test_i24_a_fleet_of_workers_counts_the_queue_gauges_once_per_interval(
    mem: MemoryDriver, clock: FakeClock, eng: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    await eng.aenqueue(fast, {"n": 1})  # waiting: the workers below serve another queue
    clock.advance(5)
    counted: list[object] = []
    asked: list[float] = []
    both_asked = asyncio.Event()
    count, ask = mem._count_gauges, mem.queue_gauges

    def counting(now: Any) -> Any:
        counted.append(now)
        return count(now)

    async def asking(*, now: Any, max_age: float = 0.0) -> Any:
        asked.append(max_age)
        got = await ask(now=now, max_age=max_age)
        if len(asked) == 2:
            both_asked.set()
        return got

    monkeypatch.setattr(mem, "_count_gauges", counting)
    monkeypatch.setattr(mem, "queue_gauges", asking)
    kw = dict(queues=("elsewhere",), gauges_interval=10.0)
    one = Worker(mem, Registry([fast, elsewhere]), config=cfg(**kw), clock=clock)
    two = Worker(mem, Registry([fast, elsewhere]), config=cfg(**kw), clock=clock)
    async with one, two:
        await both_asked.wait()
    assert asked == [10.0, 10.0] and len(counted) == 1
    for w in (one, two):
        assert w.metrics.registry.get_sample_value("queue_depth", {"queue": Q}) == 1
        assert w.metrics.registry.get_sample_value("queue_oldest_ready_seconds", {"queue": Q}) == 5


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("interval", 0),
        ("leader_lease", -1.0),
        ("retention", "7d"),
        ("dead_retention", True),
        ("worker_reap_after", 0.0),
        ("throughput_settle", -30.0),
        ("rescue_batch", 0),
        ("prune_batch", 2.5),
        ("prune_batches_per_pass", False),
    ],
)
def test_a_maintenance_setting_out_of_range_is_refused_at_declaration(field: str, value: object) -> None:
    from engine.services.maintenance import MaintenanceConfig

    with pytest.raises(JobsError) as err:
        MaintenanceConfig(**{field: value})  # type: ignore[arg-type]
    assert err.value.code == X_INVALID_ARGUMENT and field in err.value.cause and err.value.fix


def test_dead_letters_kept_shorter_than_completions_is_refused() -> None:
    from engine.services.maintenance import MaintenanceConfig

    with pytest.raises(JobsError) as err:
        MaintenanceConfig(retention=86400, dead_retention=3600)
    assert err.value.code == X_INVALID_ARGUMENT and "dead_retention" in err.value.cause


async def test_i24_a_failed_gauge_reading_is_counted_and_logged_once_a_streak(
    mem: MemoryDriver, clock: FakeClock, eng: Engine, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobs")
    await eng.aenqueue(fast, {"n": 1})
    answers: list[Exception | None] = [OSError("server closed the connection"), OSError("still down"), None]
    ask = mem.queue_gauges

    async def flaky(*, now: Any, max_age: float = 0.0) -> Any:
        failure = answers.pop(0)
        if failure is not None:
            raise failure
        return await ask(now=now, max_age=max_age)

    monkeypatch.setattr(mem, "queue_gauges", flaky)
    w = Worker(mem, Registry([fast]), config=cfg(), clock=clock)
    for _ in range(3):
        await w.refresh_gauges()
    events = [(r.getMessage(), r.fields.get("what")) for r in caplog.records]  # type: ignore[attr-defined]
    assert events.count(("jobs.worker.reconnecting", "gauges")) == 1  # once for the streak of two
    assert events.count(("jobs.worker.reconnected", "gauges")) == 1
    assert w.metrics.registry.get_sample_value("jobs_worker_reconnects_total", {"what": "gauges"}) == 2
    assert w.metrics.registry.get_sample_value("queue_depth", {"queue": Q}) == 1  # read once it came back


async def test_a_run_that_fails_unexpectedly_stops_renewing_its_lease_so_it_lapses(
    mem: MemoryDriver, clock: FakeClock, eng: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fault in the worker's own settle path (not the handler's failure) is logged, and the job's
    lease is no longer renewed: held for ever, the row would stay running and never run again."""
    import engine.runtime.execute as execute

    faulted = asyncio.Event()

    def fault(*args: Any, **kw: Any) -> Any:
        faulted.set()
        raise RuntimeError("a fault composing the nack")

    monkeypatch.setattr(execute, "failure_nack", fault)
    async with running(mem, clock, boom) as (w, seen):
        res = await eng.aenqueue(boom, {"n": 1})
        await faulted.wait()
        assert res.id not in w.keeper.leases and w.in_use == 0
        clock.advance(31)  # past the 30 s lease: a renewal round renews nothing of it
        await w.keeper.renew_once()
        row = await mem.job_get(job_id=res.id)
        assert row.state is JobState.RUNNING and row.lease_until is not None and row.lease_until < clock.now()
