"""Settling claimed jobs: completions buffered and acked in batches (one statement per batch),
nacks one by one, and what a failure to settle means (I6).

A settle that fails on a lost connection (engine/runtime/failures.py, lost_connection) is retried
with backoff while the job's lease still holds (the database is back soon after a restart, and
the fenced statement is safe to repeat). Any other failure, or a
lease that lapsed meanwhile, is a SETTLE FAILURE: logged as `jobs.worker.settle-failed`, never
counted as a job failure, the lease left to lapse so the rescuer re-delivers the row. Completed
work is never nacked.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from engine.clock import Clock
from engine.drivers.base import Driver
from engine.runtime import logs
from engine.runtime.failures import Backoff, lost_connection, reconnecting
from engine.runtime.leases import Lease, LeaseKeeper
from engine.runtime.metrics import Metrics
from engine.types import Ack, JobRow, JobState

T = TypeVar("T")


class SettleFailed(Exception):
    """The ack or nack could not be written; the lease is left to lapse."""


async def while_leased(keeper: LeaseKeeper, lease: Lease, what: str, call: Callable[[], Awaitable[T]]) -> T:
    """Run a fenced settle call, retrying connection errors while the lease holds."""
    backoff = Backoff()
    while True:
        try:
            return await call()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if not lost_connection(exc) or lease.stopped or keeper.expired(lease):
                raise SettleFailed(logs.short_error(exc)) from exc
            reconnecting(keeper.metrics, what, keeper.worker, exc)
            await backoff.wait()


def settle_failed(keeper: LeaseKeeper, lease: Lease, what: str, error: str) -> None:
    """I6: reported, not a job failure; stop renewing so the lease lapses and the row is re-delivered."""
    keeper.release(lease)
    keeper.metrics.settle_failed.labels(lease.queue).inc()
    logs.emit(
        logs.WORKER_SETTLE_FAILED,
        logging.ERROR,
        job_id=lease.claim.job_id,
        name=lease.name,
        queue=lease.queue,
        run=lease.claim.run,
        what=what,
        error=error,
        worker=keeper.worker,
    )


@dataclass(slots=True)
class Pending:
    ack: Ack
    lease: Lease
    row: JobRow
    duration: float


class AckBuffer:
    """Completions wait here and are acked in one `job_ack_many` per batch: when the buffer
    holds ``batch_size``, after ``interval`` seconds, and at drain. The interval is a batching
    window on the event loop, not a domain time, so it runs on real time even under a fake clock."""

    def __init__(
        self,
        driver: Driver,
        clock: Clock,
        keeper: LeaseKeeper,
        metrics: Metrics,
        *,
        batch_size: int,
        interval: float,
        on_settled: Callable[[Pending, str], Any] | None = None,
        parallel: int = 1,
    ) -> None:
        self.driver, self.clock, self.keeper, self.metrics = driver, clock, keeper, metrics
        self.batch_size, self.interval, self.on_settled = batch_size, interval, on_settled
        self._buf: list[Pending] = []
        self._full = asyncio.Event()
        self._any = asyncio.Event()
        self._closing = False
        self._slots = asyncio.Semaphore(parallel)
        self._inflight: set[asyncio.Future[None]] = set()

    def __len__(self) -> int:
        return len(self._buf)

    def add(self, p: Pending) -> None:
        p.lease.settling = True
        self._buf.append(p)
        self._any.set()
        if len(self._buf) >= self.batch_size:
            self._full.set()

    async def run(self) -> None:
        # Up to ``parallel`` batches in flight, each on its own pooled connection: one ack
        # statement at a time made the database's ack latency the worker's ceiling.
        while not self._closing:
            await self._any.wait()
            if len(self._buf) < self.batch_size and not self._closing:
                try:
                    await asyncio.wait_for(self._full.wait(), self.interval)
                except TimeoutError:
                    pass
            await self._slots.acquire()
            task = asyncio.ensure_future(self.flush())
            self._inflight.add(task)
            task.add_done_callback(self._flushed)

    def _flushed(self, task: asyncio.Future[None]) -> None:
        self._inflight.discard(task)
        self._slots.release()

    async def close(self) -> None:
        """Flush everything left (the drain) and wait for every batch in flight."""
        self._closing = True
        self._any.set()
        while self._buf:
            await self.flush()
        if self._inflight:
            await asyncio.gather(*self._inflight, return_exceptions=True)

    @property
    def settled(self) -> bool:
        """Nothing waits to be acked and no ack is in flight."""
        return not self._buf and not self._inflight

    async def settle(self) -> None:
        """Flush everything buffered now, without waiting for the batching window, and wait for
        every batch in flight: once it returns, every completion added before it has landed or
        been reported otherwise. Each batch is flushed in a task of its own, in flight like the
        others (close() awaits it): a caller that stops waiting cancels no ack on its way."""
        while self._buf:
            task = asyncio.ensure_future(self.flush())
            self._inflight.add(task)
            task.add_done_callback(self._inflight.discard)
            await asyncio.wait({task})
        if self._inflight:
            await asyncio.wait(set(self._inflight))

    async def flush(self) -> None:
        batch = self._buf[: self.batch_size]
        del self._buf[: len(batch)]
        if not self._buf:
            self._any.clear()
            self._full.clear()
        elif len(self._buf) < self.batch_size:
            self._full.clear()
        if not batch:
            return
        backoff = Backoff()
        while True:
            live = [p for p in batch if not p.lease.stopped]
            if not live:
                return
            try:
                landed = set(await self.driver.job_ack_many(acks=[p.ack for p in live], now=self.clock.now()))
                break
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if not lost_connection(exc):
                    await self._one_by_one(live)
                    return
                reconnecting(self.metrics, "ack", self.keeper.worker, exc)
                for p in live:
                    if self.keeper.expired(p.lease):
                        settle_failed(
                            self.keeper, p.lease, "ack", f"lease lapsed while the ack waited: {logs.short_error(exc)}"
                        )
                        self._report(p, "settle-failed")
                batch = live
                await backoff.wait()
        await self._landed(live, landed)

    async def _one_by_one(self, batch: list[Pending]) -> None:
        # A batch that failed for a reason other than the connection: find the row(s) at fault,
        # so one bad ack does not become a settle failure for the whole batch.
        for p in batch:
            try:
                landed = set(await self.driver.job_ack_many(acks=[p.ack], now=self.clock.now()))
            except Exception as exc:
                settle_failed(self.keeper, p.lease, "ack", logs.short_error(exc))
                self._report(p, "settle-failed")
                continue
            await self._landed([p], landed)

    async def _landed(self, batch: list[Pending], landed: set[str]) -> None:
        completed: dict[str, int] = {}
        for p in batch:
            lease = p.lease
            if p.row.id in landed:
                self.keeper.release(lease)
                completed[p.row.queue] = completed.get(p.row.queue, 0) + 1
                outcome = "completed"
            elif lease.stopped:  # already reported (lost, cancelled or a settle failure)
                outcome = "lost" if lease.lost else "settle-failed"
            else:
                outcome = await self._refused(p)
            self._report(p, outcome)
        for queue, n in completed.items():  # one increment per queue and batch, not per job
            self.metrics.outcome(queue, "completed", n)

    def _report(self, p: Pending, outcome: str) -> None:
        if self.on_settled is not None:
            self.on_settled(p, outcome)

    async def _refused(self, p: Pending) -> str:
        """The fence refused the ack: an operator cancelled the row, or another claim holds it."""
        try:
            row = await self.driver.job_get(job_id=p.row.id)
        except Exception:
            row = None
        if row is not None and row.state is JobState.CANCELLED and row.run == p.row.run:
            self.keeper.release(p.lease)
            self.metrics.outcome(p.row.queue, "cancelled")
            return "cancelled"
        self.keeper.report_lost(p.lease, "the ack was refused: another claim holds the row")
        self.metrics.outcome(p.row.queue, "lost")
        return "lost"
