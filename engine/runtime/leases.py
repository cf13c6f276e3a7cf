"""The leases of the jobs one worker runs: renewed together on an interval, and the loss reported
only when it is real (I13).

One `LeaseKeeper` per worker renews every held claim in ONE batched statement per tick (and the
fleet slots those jobs hold). Each `Lease` carries the `stopped` latch: set the moment its job is
settled (or given up), and re-read after every await, because a renewal already on the wire when
the job settles comes back "lost" (the ack moved the row out of `running`) and that answer is
not a loss. A lease is measured from the last renewal that LANDED, on this process's clock, so a
database that hangs or refuses is caught the same way as one that answers "lost".
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from engine.clock import Clock
from engine.drivers.base import Driver
from engine.runtime import logs
from engine.runtime.failures import Failures
from engine.runtime.health import Health
from engine.runtime.metrics import Metrics
from engine.runtime.signal import resolve_once
from engine.types import Claim

T = TypeVar("T")


def _no_abort(reason: str) -> None:
    return None


class Lease:
    """One claimed job's lease. ``stopped`` is the latch every branch after an await re-reads."""

    __slots__ = ("claim", "queue", "name", "landed", "stopped", "settling", "abort", "slot_key", "slot", "lost")

    def __init__(self, claim: Claim, queue: str, name: str, landed: float) -> None:
        self.claim = claim
        self.queue = queue
        self.name = name
        self.landed = landed  # monotonic time of the last renewal that landed (the claim first)
        self.stopped = False
        # An ack or nack for this run is on its way: the settle's own answer (landed, or refused by
        # the fence) decides whether the lease was lost, not a renewal racing it.
        self.settling = False
        self.lost = False
        self.abort: Callable[[str], None] = _no_abort  # set by the run: aborts ctx.signal
        self.slot_key: str | None = None
        self.slot: int | None = None


class LeaseKeeper:
    def __init__(
        self,
        driver: Driver,
        clock: Clock,
        *,
        worker: str,
        lease_seconds: float,
        interval: float,
        metrics: Metrics,
        health: Health | None = None,
    ) -> None:
        self.driver, self.clock, self.worker = driver, clock, worker
        self.lease_seconds, self.interval, self.metrics = lease_seconds, interval, metrics
        self.leases: dict[str, Lease] = {}
        # A renewal refused for another reason than a lost connection makes the worker not ready:
        # every lease it holds is lapsing (engine/runtime/failures.py).
        self.failures = Failures("renew", worker, metrics, health)

    def hold(self, claim: Claim, queue: str, name: str) -> Lease:
        lease = Lease(claim, queue, name, self.clock.monotonic())
        self.leases[claim.job_id] = lease
        return lease

    def release(self, lease: Lease) -> None:
        """The job is settled (or given up): stop renewing, and ignore any answer on the wire."""
        lease.stopped = True
        if self.leases.get(lease.claim.job_id) is lease:
            del self.leases[lease.claim.job_id]

    def expired(self, lease: Lease) -> bool:
        return self.clock.monotonic() - lease.landed >= self.lease_seconds

    def report_lost(self, lease: Lease, why: str) -> None:
        """The one place a loss is reported (log at error + counter), and only for a live lease."""
        if lease.stopped:  # re-read inside the reporter too: a settled job lost nothing
            return
        lease.lost = True
        self.release(lease)
        self.metrics.lease_lost.labels(lease.queue).inc()
        logs.emit(
            logs.LEASE_LOST,
            logging.ERROR,
            job_id=lease.claim.job_id,
            name=lease.name,
            queue=lease.queue,
            run=lease.claim.run,
            worker=self.worker,
            why=why,
        )
        lease.abort("lease-lost")

    async def run(self) -> None:
        while True:
            await self.clock.sleep(self.interval)
            await self.tick()

    async def tick(self) -> None:
        """One renewal round, bounded by a deadline of one interval: a statement that hangs is
        abandoned and judged as one that failed, so expiry (from the last renewal that LANDED) is
        checked whether the call answered "lost", raised, or never came back, and the next round
        renews every lease again instead of queueing behind it."""
        await self.renew_once()

    async def renew_once(self) -> None:
        live = [lease for lease in self.leases.values() if not lease.stopped]
        if not live:
            return
        now, sent = self.clock.now(), self.clock.monotonic()
        try:
            renewals = await within(
                self.clock,
                self.interval,
                self.driver.job_renew_many(
                    claims=[lease.claim for lease in live], now=now, lease_seconds=self.lease_seconds
                ),
            )
            slotted = [lease for lease in live if lease.slot_key is not None and not lease.stopped]
            kept: list[str] | None = None
            if slotted:
                kept = await within(
                    self.clock,
                    self.interval,
                    self.driver.slot_renew_many(
                        worker=self.worker,
                        job_ids=[lease.claim.job_id for lease in slotted],
                        now=now,
                        lease_seconds=self.lease_seconds,
                    ),
                )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.failures.failed(exc)
            for lease in live:
                if not lease.stopped and not lease.settling and self.expired(lease):
                    self.report_lost(lease, "no renewal landed within the lease")
            return
        self.failures.landed()
        landed = sent  # the database measures the renewed lease from ``now``, when it was sent
        for lease, r in zip(live, renewals):
            if lease.stopped:  # settled while the renewal was on the wire (I13): not a loss
                continue
            if lease.settling and r.status != "ok":
                # The ack (or nack) may have moved the row before this renewal read it: its answer,
                # handled on its own path, says whether the row was lost, so this one is not judged.
                continue
            if r.status == "ok":
                lease.landed = landed
            elif r.status == "cancelled":
                self.release(lease)
                lease.abort("cancelled")
            else:
                self.report_lost(lease, "the row is no longer held by this claim")
        if kept is not None:
            self.slots_lost([lease for lease in slotted if lease.claim.job_id not in set(kept)])

    def slots_lost(self, leases: list[Lease]) -> None:
        """Slots another holder took (ours lapsed): the fleet limit would be exceeded if the run went
        on, so each such run is stopped and shed (parked, no attempt burned) by its executor. A run
        already settling or stopped keeps its outcome: its slot is no longer needed."""
        for lease in leases:
            if lease.stopped or lease.settling or lease.slot_key is None:
                continue
            key, slot = lease.slot_key, lease.slot
            lease.slot_key = lease.slot = None  # not ours to release any more
            self.metrics.slot_lost.labels(lease.queue).inc()
            logs.emit(
                logs.SLOT_LOST,
                logging.WARNING,
                job_id=lease.claim.job_id,
                name=lease.name,
                queue=lease.queue,
                run=lease.claim.run,
                worker=self.worker,
                key=key,
                slot=slot,
            )
            lease.abort("slot-lost")


class RenewalTimedOut(TimeoutError):
    """A renewal statement did not answer within its deadline (one renewal interval)."""


async def within(clock: Clock, seconds: float, call: Coroutine[Any, Any, T]) -> T:
    """Await ``call`` for at most ``seconds`` on ``clock``. Past the deadline the call is cancelled
    and NOT awaited (a statement stuck in a driver may not honour the cancellation), so the caller
    moves on whatever the database does."""
    task: asyncio.Future[Any] = asyncio.ensure_future(call)
    late: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    timer = clock.call_later(seconds, lambda: resolve_once(late, "late"))
    try:
        await asyncio.wait({task, late}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        timer.cancel()
    if task.done():
        return task.result()
    task.cancel()
    task.add_done_callback(_consume)
    raise RenewalTimedOut(f"no answer within {seconds:g}s")


def _consume(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()
