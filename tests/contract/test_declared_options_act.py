"""Declared and enqueue options act on every driver: each test fails if its option were ignored
(a rate limit, a concurrency cap, a timeout, an enqueue's tenant, delay and priority), and an
enqueue's unknown keyword is refused with nothing written. Declared jobs run by the real Worker
on a fake clock; each test awaits the worker's executions, none sleeps for a condition."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import pytest

from engine import Engine, Enqueue, FakeClock, JobState, RateLimit, RetryPolicy, job
from engine.backfills import BackfillControl, Backfills
from engine.drivers.base import Driver
from engine.errors import X_INVALID_ARGUMENT, X_TIMEOUT, JobsError
from engine.ids import IdFactory
from engine.jobs import JobDefinition, Registry
from engine.projections import JobFilter
from engine.runtime.execute import Execution
from engine.runtime.worker import Worker, WorkerConfig
from engine.services.scheduler import Scheduler, SchedulerConfig
from engine.tasks import task

QUEUE = "declared-options"
GATES: dict[str, asyncio.Event] = {}


def _gate(name: str) -> asyncio.Event:
    return GATES.setdefault(name, asyncio.Event())


@job(name="opts.rated", queue=QUEUE, idempotency_key=lambda inp: str(inp["n"]), rate_limit=RateLimit(1, 3600.0))
async def rated(ctx, inp):  # type: ignore[no-untyped-def]
    return inp["n"]


@job(name="opts.capped", queue=QUEUE, idempotency_key=lambda inp: str(inp["n"]), concurrency=1)
async def capped(ctx, inp):  # type: ignore[no-untyped-def]
    _gate("capped-started").set()
    await _gate("capped-release").wait()
    return inp["n"]


@job(
    name="opts.hangs",
    queue=QUEUE,
    idempotency_key=lambda inp: str(inp["n"]),
    timeout=5,
    retry=RetryPolicy(attempts=1),
)
async def hangs(ctx, inp):  # type: ignore[no-untyped-def]
    _gate("hangs-started").set()
    await asyncio.Event().wait()


@job(
    name="opts.plain",
    queue=QUEUE,
    idempotency_key=lambda inp: str(inp["n"]),
    priority=3,
    retry=RetryPolicy(attempts=7),
)
async def plain(ctx, inp):  # type: ignore[no-untyped-def]
    return None


@task(
    name="opts.nightly",
    cron="30 1 * * *",
    timezone="Asia/Tokyo",
    queue=QUEUE,
    priority=6,
    retry=RetryPolicy(attempts=4),
    input={"region": "eu"},
)
async def nightly(ctx, inp):  # type: ignore[no-untyped-def]
    return None


def _engine(driver: Driver, clock: FakeClock) -> Engine:
    return Engine(driver, clock=clock, ids=IdFactory(clock, seed=23))


@asynccontextmanager
async def _worker(driver: Driver, clock: FakeClock, *jobs: JobDefinition) -> AsyncIterator[asyncio.Queue[Execution]]:
    GATES.clear()
    seen: asyncio.Queue[Execution] = asyncio.Queue()
    cfg = WorkerConfig(queues=(QUEUE,), concurrency=4, lease_seconds=30, poll_interval=1.0, grace=1.0)
    async with Worker(driver, Registry(jobs), config=cfg, clock=clock, on_execution=seen.put_nowait):
        yield seen


async def _settled(seen: asyncio.Queue[Execution], driver: Driver) -> Execution:
    """The worker's next execution; after 5 s (a wake-up missed under load) the queue is NOTIFYed
    as the worker's poll would have looked again. Never the expected path."""
    try:
        return await asyncio.wait_for(seen.get(), timeout=5)
    except TimeoutError:
        await driver.queue_notify(queues=[QUEUE])
    return await asyncio.wait_for(seen.get(), timeout=15)


async def test_a_declared_rate_limit_parks_the_start_past_its_limit(driver: Driver, clock: FakeClock) -> None:
    eng = _engine(driver, clock)
    async with _worker(driver, clock, rated) as seen:
        await eng.aenqueue_many([Enqueue(rated, {"n": 1}), Enqueue(rated, {"n": 2})])
        outcomes = sorted([(await _settled(seen, driver)).outcome for _ in range(2)])
    assert outcomes == ["completed", "parked"]  # limit=1 per hour: the second start is shed


async def test_a_declared_concurrency_cap_parks_a_second_run_while_the_first_holds_the_slot(
    driver: Driver, clock: FakeClock
) -> None:
    eng = _engine(driver, clock)
    async with _worker(driver, clock, capped) as seen:
        await eng.aenqueue(capped, {"n": 1})
        await asyncio.wait_for(_gate("capped-started").wait(), timeout=15)
        second = await eng.aenqueue(capped, {"n": 2})
        await driver.queue_notify(queues=[QUEUE])
        shed = await _settled(seen, driver)
        _gate("capped-release").set()
        done = await _settled(seen, driver)
    assert (shed.job_id, shed.outcome, done.outcome) == (second.id, "parked", "completed")


async def test_a_declared_timeout_stops_the_attempt_as_x_timeout(driver: Driver, clock: FakeClock) -> None:
    eng = _engine(driver, clock)
    async with _worker(driver, clock, hangs) as seen:
        r = await eng.aenqueue(hangs, {"n": 1})
        await asyncio.wait_for(_gate("hangs-started").wait(), timeout=15)
        clock.advance(5)
        ex = await _settled(seen, driver)
    assert (ex.job_id, ex.outcome, ex.error_code) == (r.id, "dead", X_TIMEOUT)
    assert (await eng.aget(r.id)).state is JobState.DEAD


async def test_enqueue_options_and_declared_ones_reach_the_row(driver: Driver, clock: FakeClock) -> None:
    eng = _engine(driver, clock)
    declared = await eng.aget((await eng.aenqueue(plain, {"n": 1})).id)
    assert (declared.queue, declared.priority, declared.max_attempts, declared.tenant) == (QUEUE, 3, 7, None)
    assert declared.state is JobState.READY
    given = await eng.aget((await eng.aenqueue(plain, {"n": 2}, tenant="acme", delay=90, priority=-4)).id)
    assert (given.priority, given.tenant, given.state) == (-4, "acme", JobState.DELAYED)
    assert given.run_at == clock.now() + timedelta(seconds=90)


@pytest.mark.parametrize("call", ["aenqueue", "astage"])
@pytest.mark.parametrize(("option", "named"), [("key", "'key'"), ("prority", "did you mean 'priority'")])
async def test_an_enqueue_with_an_unknown_keyword_is_refused_and_writes_nothing(
    driver: Driver, clock: FakeClock, call: str, option: str, named: str
) -> None:
    eng = _engine(driver, clock)
    args: tuple[Any, ...] = (plain, {"n": 9}) if call == "aenqueue" else (None, plain, {"n": 9})
    with pytest.raises(JobsError) as info:
        await getattr(eng, call)(*args, **{option: "order:9"})
    err = info.value
    assert err.code == X_INVALID_ARGUMENT and named in err.cause and f"eng.{call}(job, input, " in err.fix
    assert not (await eng.aenqueue(plain, {"n": 9})).deduped  # the refused call wrote nothing


async def test_a_tasks_declared_zone_queue_priority_attempts_and_input_reach_its_occurrence(
    driver: Driver, clock: FakeClock
) -> None:
    s = Scheduler(driver, clock, [nightly], holder="a", config=SchedulerConfig(interval=300.0, leader_lease=900.0))
    for _ in range(57):  # 12:00 to 16:45 UTC, a tick every 5 minutes: 01:30 in Tokyo is 16:30 UTC
        await s.run_once()
        clock.advance(300)
    page = await driver.job_page(
        where=JobFilter(name="opts.nightly"), limit=10, cursor=None, count_cap=10, budget_ms=None
    )
    [row] = page.items
    assert row.idempotency_key == "opts.nightly@2026-01-01T16:30:00Z"
    assert (row.queue, row.priority, row.max_attempts) == (QUEUE, 6, 4)
    full = await driver.job_get(job_id=row.id)
    assert full is not None and full.input["input"] == {"region": "eu"}


async def test_a_backfills_declared_queue_environment_and_version_reach_its_pass(
    driver: Driver, clock: FakeClock
) -> None:
    bf = Backfills(queue="opts-maintenance", version="7.1")
    declare = bf.backfill(
        "opts_sweep", source=lambda conn, after, size: ([], after), count=lambda conn: 0, environments=["staging"]
    )
    declare(lambda batch: None)
    eng = Engine(driver, clock=clock, ids=IdFactory(clock, seed=29), environment="production")
    with pytest.raises(JobsError) as info:  # declared for staging only: refused in production
        await BackfillControl(eng, bf, actor="ops").start("opts_sweep", write=True)
    assert info.value.code == "X_BACKFILL_ENVIRONMENT"
    staging = Engine(driver, clock=clock, ids=IdFactory(clock, seed=31), environment="staging")
    started = await BackfillControl(staging, bf, actor="ops").start("opts_sweep", write=True)
    row = await staging.aget(started.job_id)
    assert (row.queue, row.input["environment"], row.input["app_version"]) == ("opts-maintenance", "staging", "7.1")
