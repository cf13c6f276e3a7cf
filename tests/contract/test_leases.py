"""The worker's leases on every driver (I13): a renewal that hangs is caught by its deadline and the
lease measured from the last renewal that landed; a renewal racing the job's own ack is no loss."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import pytest

from engine.api import Engine
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.jobs import job
from engine.runtime.leases import LeaseKeeper
from engine.runtime.metrics import Metrics
from engine.runtime.settle import AckBuffer, Pending
from engine.types import Ack, ClaimedJob, JobState, Renewal
from tests.contract.test_worker_drivers import _new
from tests.engine.test_worker import Q, gate, next_of, running

LEASE = 3.0
TICK = 1.0


class Wrapped:
    """The driver under test, with some statements replaced; everything else passes through."""

    def __init__(self, inner: Driver) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def lost_events(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage() == "jobs.lease.lost"]


async def claim(driver: Driver, ids: IdFactory, clock: FakeClock, n: int = 1) -> list[ClaimedJob]:
    await driver.job_enqueue(jobs=[_new(ids) for _ in range(n)], now=clock.now())
    batch = await driver.worker_claim(queues=["default"], limit=n, worker="w1", now=clock.now(), lease_seconds=LEASE)
    assert len(batch.jobs) == n
    return batch.jobs


async def tick_on(clock: FakeClock, keeper: LeaseKeeper, hung: asyncio.Event) -> None:
    """One keeper tick; each time its renewal hangs (``hung`` is set by the statement), the fake clock
    is moved past the renewal's deadline. A renewal that answers is never hurried."""
    task = asyncio.ensure_future(keeper.tick())
    while True:
        waiter = asyncio.ensure_future(hung.wait())
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            waiter.cancel()
            return await task
        hung.clear()
        while clock.sleepers == 0:  # the deadline's timer is armed in the same turn as the statement
            await asyncio.sleep(0)
        clock.advance(TICK)


async def test_i13_a_renewal_that_never_returns_is_a_lost_lease_once_the_lease_passes(
    driver: Driver, ids: IdFactory, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    never, hung = asyncio.Event(), asyncio.Event()
    calls = 0

    async def hangs(**kw: Any) -> list[Renewal]:
        nonlocal calls
        calls += 1
        hung.set()
        await never.wait()
        raise AssertionError("unreachable")

    wrapped = Wrapped(driver)
    wrapped.job_renew_many = hangs
    metrics = Metrics()
    keeper = LeaseKeeper(wrapped, clock, worker="w1", lease_seconds=LEASE, interval=TICK, metrics=metrics)  # type: ignore[arg-type]
    (cj,) = await claim(driver, ids, clock)
    lease = keeper.hold(cj.claim, cj.row.queue, cj.row.name)
    aborted: list[str] = []
    lease.abort = aborted.append
    for _ in range(2):  # each tick's renewal hangs until its deadline (one interval) cancels it
        await asyncio.wait_for(tick_on(clock, keeper, hung), timeout=10)  # a safety net: pre-fix this never returns
    assert calls >= 2 and aborted == []  # 2 s since the claim landed: the lease still holds
    await asyncio.wait_for(tick_on(clock, keeper, hung), timeout=10)
    assert aborted == ["lease-lost"] and len(lost_events(caplog)) == 1
    assert metrics.registry.get_sample_value("lease_lost_total", {"queue": cj.row.queue}) == 1.0


async def test_i13_one_hung_renewal_does_not_stall_the_next_so_every_lease_keeps_renewing(
    driver: Driver, ids: IdFactory, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    never, hung = asyncio.Event(), asyncio.Event()
    calls = 0

    async def first_hangs(**kw: Any) -> list[Renewal]:
        nonlocal calls
        calls += 1
        if calls == 1:
            hung.set()
            await never.wait()
        return await driver.job_renew_many(**kw)

    wrapped = Wrapped(driver)
    wrapped.job_renew_many = first_hangs
    keeper = LeaseKeeper(wrapped, clock, worker="w1", lease_seconds=LEASE, interval=TICK, metrics=Metrics())  # type: ignore[arg-type]
    leases = [keeper.hold(cj.claim, cj.row.queue, cj.row.name) for cj in await claim(driver, ids, clock, n=2)]
    await asyncio.wait_for(tick_on(clock, keeper, hung), timeout=10)  # hangs until its deadline
    for _ in range(5):  # 6 s in all, twice the lease: the renewals after the hung one land for both jobs
        clock.advance(TICK)
        await asyncio.wait_for(tick_on(clock, keeper, hung), timeout=10)
    assert calls >= 3 and all(not lease.stopped for lease in leases) and lost_events(caplog) == []
    for lease in leases:
        row = await driver.job_get(job_id=lease.claim.job_id)
        assert row is not None and row.lease_until is not None and row.lease_until > clock.now()


def _acks_through(driver: Driver, clock: FakeClock, ack_many: Any) -> tuple[LeaseKeeper, AckBuffer, list[str], Metrics]:
    """A lease keeper and an ack buffer whose ack statement is ``ack_many``, the outcomes it
    reports collected in order."""
    wrapped = Wrapped(driver)
    wrapped.job_ack_many = ack_many
    metrics = Metrics()
    keeper = LeaseKeeper(wrapped, clock, worker="w1", lease_seconds=LEASE, interval=TICK, metrics=metrics)  # type: ignore[arg-type]
    outcomes: list[str] = []
    acks = AckBuffer(
        wrapped,  # type: ignore[arg-type]
        clock,
        keeper,
        metrics,
        batch_size=10,
        interval=0.01,
        on_settled=lambda p, outcome: outcomes.append(outcome),
    )
    return keeper, acks, outcomes, metrics


async def test_i13_a_renewal_answered_lost_because_the_jobs_own_ack_landed_first_is_no_loss(
    driver: Driver, ids: IdFactory, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # The interleaving of a short lease under load: the ack lands in the database, the renewal
    # then reads the row (no longer running: "lost"), and its answer is handled before the ack's.
    acked, answered = asyncio.Event(), asyncio.Event()

    async def ack_then_wait(*, acks: Sequence[Ack], now: Any) -> list[str]:
        landed = await driver.job_ack_many(acks=acks, now=now)
        acked.set()
        await answered.wait()
        return landed

    keeper, acks, outcomes, metrics = _acks_through(driver, clock, ack_then_wait)
    (cj,) = await claim(driver, ids, clock)
    lease = keeper.hold(cj.claim, cj.row.queue, cj.row.name)
    aborted: list[str] = []
    lease.abort = aborted.append
    acks.add(Pending(Ack(cj.claim, {"ok": True}), lease, cj.row, 0.1))
    flushing = asyncio.ensure_future(acks.flush())
    await acked.wait()
    renewals = await driver.job_renew_many(claims=[cj.claim], now=clock.now(), lease_seconds=LEASE)
    assert [r.status for r in renewals] == ["lost"]  # what the racing renewal reads
    await keeper.renew_once()  # ...and its answer is handled before the ack's
    answered.set()
    await flushing
    assert outcomes == ["completed"] and aborted == [] and lost_events(caplog) == []
    assert metrics.registry.get_sample_value("lease_lost_total", {"queue": cj.row.queue}) is None


async def test_a_settle_whose_caller_stops_waiting_still_lands_and_reports_its_acks(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    # A burst worker waits on settle() and on new work at once, and stops waiting for the one
    # that loses: the ack statement it had sent must still be answered, its lease let go and its
    # completion reported (close() awaits it), never dropped with the cancelled wait.
    sent, answer = asyncio.Event(), asyncio.Event()

    async def ack_when_told(*, acks: Sequence[Ack], now: Any) -> list[str]:
        sent.set()
        await answer.wait()
        return await driver.job_ack_many(acks=acks, now=now)

    keeper, acks, outcomes, _ = _acks_through(driver, clock, ack_when_told)
    (cj,) = await claim(driver, ids, clock)
    lease = keeper.hold(cj.claim, cj.row.queue, cj.row.name)
    acks.add(Pending(Ack(cj.claim, {"ok": True}), lease, cj.row, 0.1))
    waiting = asyncio.ensure_future(acks.settle())
    await sent.wait()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert not acks.settled  # the batch is still in flight, not lost
    answer.set()
    await acks.close()
    assert outcomes == ["completed"] and acks.settled
    assert keeper.leases.get(cj.claim.job_id) is None
    row = await driver.job_get(job_id=cj.claim.job_id)
    assert row is not None and row.state is JobState.COMPLETED


@job(name="lease.slotted", queue=Q, concurrency=1, idempotency_key=lambda inp: str(inp["n"]))
async def slotted(ctx, inp):  # type: ignore[no-untyped-def]
    gate("slotted-started").set()
    await gate("slotted-never").wait()  # runs until stopped


async def test_a_lost_fleet_slot_is_detected_logged_counted_and_the_run_shed(
    driver: Driver, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    eng = Engine(driver, clock=clock, ids=IdFactory(clock, seed=51))
    async with running(driver, clock, slotted, lease_seconds=30, shed_delay=5.0) as (w, seen):  # type: ignore[arg-type]
        r = await eng.aenqueue(slotted, {"n": 1})
        await gate("slotted-started").wait()
        # The slot passes to another holder (as when ours lapsed while this worker stalled).
        await driver.slot_release(key="concurrency:lease.slotted", slot=0, job_id=r.id)
        other = await driver.slot_acquire(
            key="concurrency:lease.slotted", limit=1, job_id=ids_other(), worker="w2", now=clock.now(), lease_seconds=30
        )
        assert other == 0
        clock.advance(10)  # one renewal interval: the slot renewal answers without this job
        done = await next_of(seen)
        assert (done.outcome, done.attempt) == ("parked", 1)
    (lost,) = [rec for rec in caplog.records if rec.getMessage() == "jobs.worker.slot-lost"]
    assert lost.levelno == logging.WARNING
    assert w.metrics.registry.get_sample_value("jobs_slot_lost_total", {"queue": Q}) == 1.0
    assert lost_events(caplog) == []  # the job's own lease was never lost
    row = await driver.job_get(job_id=r.id)
    assert row is not None and row.state is JobState.PARKED and row.attempt == 0  # no attempt burned (I8)
    # The other holder's slot is untouched: it still holds the limit.
    assert (
        await driver.slot_acquire(
            key="concurrency:lease.slotted", limit=1, job_id=r.id, worker="w1", now=clock.now(), lease_seconds=30
        )
        is None
    )


def ids_other() -> str:
    return "00000000-0000-7000-8000-0000000000aa"
