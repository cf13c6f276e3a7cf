"""A process exports a service's gauges only when it runs that service: every process registers the
same families, and a gauge its process never sets is left out of the exposition (its HELP and TYPE
lines, no sample) rather than exported as a 0 nobody measured. `jobsctl relay` and `jobsctl worker
--no-scheduler` exported `jobs_scheduler_leader_tick_age_seconds 0.0`, which an alert reads as a
leader that just ticked."""

from __future__ import annotations

from typing import Any

from prometheus_client import generate_latest

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.jobs import job
from engine.runtime.metrics import Metrics
from engine.services.maintenance import maintained_worker
from engine.services.relay import Relay
from engine.services.scheduler import Scheduler, SchedulerConfig
from engine.tasks import task

TICK_AGE = "jobs_scheduler_leader_tick_age_seconds"
OUTBOX = ("outbox_backlog", "outbox_oldest_unpublished_seconds")
SLOTS = "jobs_worker_slots_in_use"


@task(name="absent.nightly", cron="0 2 * * *", queue="absent")
async def nightly(ctx: Any, inp: Any) -> None:
    return None


@job(name="absent.work", queue="absent", idempotency_key=lambda inp: str(inp))
async def work(ctx: Any, inp: Any) -> None:
    return None


def samples(m: Metrics, name: str) -> list[str]:
    """The exposition's sample lines of ``name`` (not its HELP and TYPE comments)."""
    text = generate_latest(m.registry).decode()
    return [line for line in text.splitlines() if line.split("{")[0].split(" ")[0] == name]


async def test_a_worker_that_runs_no_scheduler_leaves_the_leader_tick_age_out_of_its_metrics(
    driver: Driver, clock: FakeClock
) -> None:
    without, with_ = Metrics(), Metrics()
    quiet = dict(clock=clock, maintenance=False, relay=False, queues=["absent"])
    w = maintained_worker(driver, [nightly, work], scheduler=False, metrics=without, **quiet)  # type: ignore[arg-type]
    s = maintained_worker(driver, [nightly, work], metrics=with_, **quiet)  # type: ignore[arg-type]
    await w.start()
    try:
        assert w.scheduler is None and s.scheduler is not None
        await s.scheduler.run_once()  # the other worker leads: the fleet has a leader that just ticked
        assert samples(with_, TICK_AGE) == [f"{TICK_AGE} 0.0"]
        assert samples(without, TICK_AGE) == []
        assert f"# TYPE {TICK_AGE} gauge" in generate_latest(without.registry).decode()
    finally:
        await w.drain()


async def test_a_relay_alone_exports_neither_the_schedulers_tick_age_nor_a_workers_slots(
    driver: Driver, clock: FakeClock
) -> None:
    m = Metrics()
    await Relay(driver, clock, metrics=m).run_once()
    assert samples(m, TICK_AGE) == [] and samples(m, SLOTS) == []
    assert [samples(m, name) for name in OUTBOX] == [["outbox_backlog 0.0"], ["outbox_oldest_unpublished_seconds 0.0"]]


async def test_a_scheduler_alone_exports_its_tick_age_and_no_outbox_gauges_nor_worker_slots(
    driver: Driver, clock: FakeClock
) -> None:
    m = Metrics()
    await Scheduler(driver, clock, [nightly], holder="a", config=SchedulerConfig(), metrics=m).run_once()
    assert samples(m, TICK_AGE) == [f"{TICK_AGE} 0.0"]
    assert [samples(m, name) for name in (*OUTBOX, SLOTS)] == [[], [], []]


async def test_a_worker_that_runs_no_relay_leaves_the_outbox_gauges_out_of_its_metrics(
    driver: Driver, clock: FakeClock
) -> None:
    without, with_ = Metrics(), Metrics()
    quiet = dict(clock=clock, maintenance=False, scheduler=False, queues=["absent"])
    w = maintained_worker(driver, [work], relay=False, metrics=without, **quiet)  # type: ignore[arg-type]
    r = maintained_worker(driver, [work], metrics=with_, **quiet)  # type: ignore[arg-type]
    await w.start()
    try:
        assert w.relay is None and r.relay is not None
        await r.relay.run_once()
        assert [samples(with_, name) for name in OUTBOX] == [
            ["outbox_backlog 0.0"],
            ["outbox_oldest_unpublished_seconds 0.0"],
        ]
        assert [samples(without, name) for name in OUTBOX] == [[], []]
    finally:
        await w.drain()
