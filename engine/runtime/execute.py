"""One claimed job, run and settled: limits, context, handler, timeout, cancel, classification.

This is the ONE place `timeout`, `step_timeout` and `event_poll` are forwarded from the job's
declaration to the run (I11): `step_api_for` builds the step runner, `Runner.run` arms the
attempt's deadline. Every stop of a run goes through `ctx.signal` (timeout, an operator's cancel,
lease loss, drain); a body that finishes after its signal was aborted is logged as abandoned.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from engine.clock import Clock
from engine.codec import dumps
from engine.drivers.base import Driver
from engine.errors import X_HANDLER_FAILED, X_TIMEOUT, JobsError
from engine.jobs import JobDefinition, Registry
from engine.retry import UNKNOWN_GRACE, RetryPolicy, failure_nack
from engine.runtime import logs
from engine.runtime.context import JobContext
from engine.runtime.leases import Lease, LeaseKeeper
from engine.runtime.limits import Limits, RateKeyFailed, Shed, concurrency_key
from engine.runtime.metrics import Metrics
from engine.runtime.settle import AckBuffer, Pending, SettleFailed, settle_failed, while_leased
from engine.runtime.signal import RunSignal
from engine.runtime.steps import StepApi
from engine.runtime.suspend import StepSuspension
from engine.types import Ack, Claim, ClaimedJob, JobRow, Nack, StopReason

if TYPE_CHECKING:
    from engine.tracing import Tracing


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ cost ~5 us a job on the hot path
class Execution:
    """What one claimed run came to. ``stop_reason`` is published here as on the log event (I5).

    outcome: completed | retried | dead | suspended | parked | released | cancelled | lost |
    settle-failed. A completion is reported when its ack lands (the ack buffer's ``on_settled``):
    ``completed``, or what became of the ack.
    """

    job_id: str
    name: str
    queue: str
    attempt: int
    outcome: str
    stop_reason: StopReason | None = None
    error: str | None = None
    error_code: str | None = None
    duration: float = 0.0
    abort_reason: str | None = None  # timeout | cancelled | lease-lost | slot-lost | drain


def step_api_for(
    d: JobDefinition,
    driver: Driver,
    cj: ClaimedJob,
    claim: Claim,
    clock: Clock,
    signal: RunSignal,
    loop: asyncio.AbstractEventLoop | None = None,
    tracing: Tracing | None = None,
    engine: Callable[[], Any] | None = None,
) -> StepApi:
    """The step runner of one run, with the job's declared ceilings (I11: forwarded only here)."""
    return StepApi(
        driver=driver,
        claim=claim,
        row=cj.row,
        clock=clock,
        signal=signal,
        step_timeout=d.step_timeout,
        event_poll=d.event_poll,
        loop=loop,
        tracing=tracing,
        engine=engine,
    )


def _sync_body(fn: Callable[..., Any], ctx: JobContext, inp: Any, row: JobRow) -> Any:
    # In the thread: the loop stopped waiting for us when the signal was aborted, so a body that
    # returns after that did its work for nothing, and says so.
    result = fn(ctx, inp)
    if ctx.signal.aborted:
        _abandoned(row, ctx.signal.reason)
    return result


def _not_an_exception(row: JobRow, exc: BaseException) -> JobsError:
    """A handler's BaseException that is not an Exception, as the engine's error (its cause the
    original, so the stored traceback shows where it was raised): left to propagate, it would end
    the worker's loop and every job it runs."""
    try:
        raise JobsError(
            X_HANDLER_FAILED,
            cause=f"the handler of job {row.name!r} raised {type(exc).__name__}({exc!s}), a BaseException that is "
            "not an Exception; it fails this attempt instead of ending the worker",
            fix="raise an Exception (or a JobsError with a code) from a handler, never SystemExit or KeyboardInterrupt",
        ) from exc
    except JobsError as err:
        return err


def _abandoned(row: JobRow, reason: str | None) -> None:
    logs.emit(
        logs.TIMEOUT_ABANDONED,
        logging.WARNING,
        job_id=row.id,
        name=row.name,
        queue=row.queue,
        attempt=row.attempt,
        reason=reason,
    )


class Runner:
    """Runs claimed jobs for one worker. One instance; `run` is called once per claimed job."""

    def __init__(
        self,
        *,
        driver: Driver,
        registry: Registry,
        clock: Clock,
        worker: str,
        keeper: LeaseKeeper,
        acks: AckBuffer,
        limits: Limits,
        metrics: Metrics,
        executor: Executor,
        poke: Callable[[], None] = lambda: None,
        traceback_limit: int = 8192,
        tasks: Mapping[str, asyncio.Task[Any]],
        tracing: Tracing | None = None,
        engine: Callable[[], Any] | None = None,
    ) -> None:
        self.driver, self.registry, self.clock, self.worker = driver, registry, clock, worker
        self.keeper, self.acks, self.limits, self.metrics = keeper, acks, limits, metrics
        self.executor, self.poke, self.traceback_limit = executor, poke, traceback_limit
        self.tasks = tasks  # the task running each job, by id: what an abort cancels
        # What a handler's ctx.engine answers, made by ``engine`` on first use (None: a worker built
        # on a bare driver has none).
        self._make_engine, self._engine = engine, None
        self._ctx_engine = self._the_engine if engine is not None else None
        self._unknown_logged: dict[str, tuple[float, int]] = {}  # a job name: last logged, parked since
        self.tracing = tracing
        if tracing is not None:  # each run in a span; without, run is called with no frame around it
            self.run = self._traced  # type: ignore[method-assign]

    def _the_engine(self) -> Any:
        if self._engine is None:
            assert self._make_engine is not None
            self._engine = self._make_engine()
        return self._engine

    async def _traced(self, cj: ClaimedJob) -> Execution | None:
        """``run`` inside the run's ``process`` span (engine/tracing.py), current for the handler."""
        assert self.tracing is not None
        with self.tracing.process(cj.row) as span:
            ex = await Runner.run(self, cj)
            self.tracing.ended(span, ex)
            return ex

    async def run(self, cj: ClaimedJob) -> Execution | None:
        """The run's outcome; None for a completion, which is handed to the ack buffer and
        reported once its ack lands (``AckBuffer.on_settled``)."""
        row = cj.row
        lease = self.keeper.hold(cj.claim, row.queue, row.name)  # lease.claim: built once per run
        try:
            d = self.registry.get(row.name)
        except JobsError as exc:  # another release of the app enqueued it
            return await self._unknown(cj, lease, exc)
        try:
            if d.concurrency is not None or d.rate_limit is not None:
                try:
                    shed = await self.limits.admit(d, row, lease)
                except RateKeyFailed as exc:  # the app's key failed on this input: a failed attempt (terminal)
                    return await self._failed(cj, lease, d.retry, exc, 0.0)
                if shed is not None:
                    return await self._shed(cj, lease, shed)
            return await self._execute(cj, d, lease)
        finally:
            if lease.slot_key is not None:
                try:
                    await self.limits.release(lease)
                except Exception:  # the slot's lease lapses on its own; nothing to settle
                    pass

    async def _execute(self, cj: ClaimedJob, d: JobDefinition, lease: Lease) -> Execution | None:
        row = cj.row
        signal, loop, engine = RunSignal(), asyncio.get_running_loop(), self._ctx_engine
        ctx = JobContext(
            row,
            signal,
            lambda: step_api_for(d, self.driver, cj, lease.claim, self.clock, signal, loop, self.tracing, engine),
            engine,
        )
        running = True

        def abort(reason: str) -> None:
            if signal.aborted:
                return
            signal.abort(reason)
            task = self.tasks.get(row.id) if running else None
            if task is not None:
                task.cancel()  # the handler stops at its next await; a sync body is left behind

        lease.abort = abort  # what the drain, a cancel and a lost lease call
        deadline = self.clock.call_later(d.timeout, lambda: abort("timeout")) if d.timeout is not None else None
        t0 = self.clock.monotonic()
        outcome_exc: BaseException | None = None
        result: Any = None
        try:
            if d.is_async:
                result = await d.fn(ctx, row.input)
                if signal.aborted:
                    _abandoned(row, signal.reason)
            else:
                # In a copy of this task's context, as asyncio.to_thread runs it: what the caller set
                # (a tracing span, an app's own context variables) is current in the thread too.
                body = contextvars.copy_context().run
                result = await loop.run_in_executor(self.executor, body, _sync_body, d.fn, ctx, row.input, row)
        except asyncio.CancelledError:
            if not signal.aborted:
                raise  # the worker itself is being torn down
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
        except StepSuspension as s:
            outcome_exc = s
        except Exception as exc:
            outcome_exc = exc
        except BaseException as exc:  # SystemExit, KeyboardInterrupt, an app's own BaseException
            if isinstance(exc, GeneratorExit):  # this coroutine is being closed
                raise
            outcome_exc = _not_an_exception(row, exc)  # this attempt's failure, not the worker's end
        finally:
            running = False
            if deadline is not None:
                deadline.cancel()
        duration = self.clock.monotonic() - t0
        self.metrics.observe(row.queue, duration)
        if signal.aborted:
            return await self._aborted(cj, d, lease, signal.reason or "aborted", duration)
        if isinstance(outcome_exc, StepSuspension):
            return await self._suspend(cj, lease, outcome_exc, duration)
        if outcome_exc is not None:
            return await self._failed(cj, lease, d.retry, outcome_exc, duration)
        text = "null"
        if result is not None:
            try:
                text = dumps(result, what="result", job=row.name)  # one bad result must not fail a whole ack batch
            except JobsError as exc:
                return await self._failed(cj, lease, d.retry, exc, duration)
        self.acks.add(Pending(Ack(lease.claim, result, text), lease, row, duration))
        return None

    async def _aborted(self, cj: ClaimedJob, d: JobDefinition, lease: Lease, reason: str, duration: float) -> Execution:
        row = cj.row
        if reason == "timeout":
            exc = JobsError(
                X_TIMEOUT,
                cause=f"job {row.name!r} ran past its timeout={d.timeout}s (attempt {row.attempt})",
                fix=f"@job(name={row.name!r}, timeout={int((d.timeout or 1) * 2)})",
            )
            return await self._failed(cj, lease, d.retry, exc, duration, abort_reason=reason)
        if reason == "slot-lost":  # another holder has the fleet slot: shed, as if the limit refused it
            return await self._shed(cj, lease, Shed("concurrency", concurrency_key(d), self.limits.shed_delay))
        if reason == "drain":
            ok = await self._nack(lease, Nack(lease.claim, "release"))
            if ok:
                self.metrics.outcome(row.queue, "released")
            return Execution(
                row.id,
                row.name,
                row.queue,
                row.attempt,
                "released" if ok else "settle-failed",
                duration=duration,
                abort_reason=reason,
            )
        # cancelled (the row is already final) or lease-lost (already reported): nothing to settle.
        self.keeper.release(lease)
        outcome = "cancelled" if reason == "cancelled" else "lost"
        if outcome == "cancelled":
            logs.emit(logs.JOB_CANCELLED, job_id=row.id, name=row.name, queue=row.queue, attempt=row.attempt)
        self.metrics.outcome(row.queue, outcome)
        return Execution(row.id, row.name, row.queue, row.attempt, outcome, duration=duration, abort_reason=reason)

    async def _shed(self, cj: ClaimedJob, lease: Lease, shed: Shed) -> Execution:
        row = cj.row
        wait = {"kind": "limit", "limit": shed.limit, "key": shed.key}
        nack = Nack(lease.claim, "park", run_at=self.clock.now() + timedelta(seconds=shed.wait), wait=wait)
        logs.emit(
            logs.WORKER_SHED,
            job_id=row.id,
            name=row.name,
            queue=row.queue,
            limit=shed.limit,
            key=shed.key,
            retry_in=round(shed.wait, 3),
        )
        ok = await self._nack(lease, nack)
        if ok:
            self.metrics.outcome(row.queue, "parked")
        return Execution(row.id, row.name, row.queue, row.attempt, "parked" if ok else "settle-failed")

    async def _unknown(self, cj: ClaimedJob, lease: Lease, exc: JobsError) -> Execution:
        """A job this worker's release does not declare: a release that does is rolling out (its
        producers first), or the job was removed. Parked for a worker that knows it, burning no
        attempt, tried again sooner while it is new and at most a minute apart; once it has
        waited UNKNOWN_GRACE since it first fell due, dead as X_UNKNOWN_JOB (terminal)."""
        row = cj.row
        now = self.clock.now()
        waited = (now - (row.waiting_since or row.run_at)).total_seconds()
        if waited >= UNKNOWN_GRACE:
            return await self._failed(cj, lease, RetryPolicy(attempts=row.max_attempts), exc, 0.0)
        again = now + timedelta(seconds=min(60.0, max(5.0, waited / 4)))
        # Once a minute a job name at most: a deploy's backlog of new jobs would flood the log.
        last, parked = self._unknown_logged.get(row.name, (-math.inf, 0))
        if self.clock.monotonic() - last >= 60.0:
            logs.emit(
                logs.WORKER_UNKNOWN_JOB,
                logging.WARNING,
                job_id=row.id,
                name=row.name,
                queue=row.queue,
                worker=self.worker,
                parked_since_last=parked,
                retry_at=again.isoformat(),
                dead_at=(now + timedelta(seconds=UNKNOWN_GRACE - waited)).isoformat(),
            )
            self._unknown_logged[row.name] = (self.clock.monotonic(), 0)
        else:
            self._unknown_logged[row.name] = (last, parked + 1)
        wait = {"kind": "unknown", "name": row.name, "worker": self.worker}
        ok = await self._nack(lease, Nack(lease.claim, "park", run_at=again, wait=wait))
        if ok:
            self.metrics.outcome(row.queue, "parked")
        return Execution(row.id, row.name, row.queue, row.attempt, "parked" if ok else "settle-failed")

    async def _suspend(self, cj: ClaimedJob, lease: Lease, s: StepSuspension, duration: float) -> Execution:
        row = cj.row
        logs.emit(
            logs.JOB_SUSPENDED,
            logging.DEBUG,
            job_id=row.id,
            name=row.name,
            queue=row.queue,
            until=s.run_at.isoformat(),
            wait=s.wait,
        )
        ok = await self._nack(lease, Nack(lease.claim, "suspend", run_at=s.run_at, wait=s.wait))
        if ok:
            self.metrics.outcome(row.queue, "suspended")
        return Execution(
            row.id, row.name, row.queue, row.attempt, "suspended" if ok else "settle-failed", duration=duration
        )

    async def _failed(
        self,
        cj: ClaimedJob,
        lease: Lease,
        policy: RetryPolicy,
        exc: BaseException,
        duration: float,
        abort_reason: str | None = None,
    ) -> Execution:
        row = cj.row
        nack, decision = failure_nack(
            lease.claim,
            exc,
            policy,
            attempt=row.attempt,
            max_attempts=row.max_attempts,
            now=self.clock.now(),
            traceback_limit=self.traceback_limit,
        )
        outcome = "retried" if nack.outcome == "retry" else "dead"
        logs.emit(
            logs.ATTEMPT_FAILED,
            logging.WARNING if outcome == "retried" else logging.ERROR,
            job_id=row.id,
            name=row.name,
            queue=row.queue,
            attempt=row.attempt,
            max_attempts=row.max_attempts,
            error_code=nack.error_code,
            error=nack.error,
            fix=nack.fix,
            outcome=outcome,
            stop=nack.stop_reason,
            retry_in=round(decision.delay, 3) if nack.run_at else None,
        )
        ok = await self._nack(lease, nack)
        if ok:
            self.metrics.outcome(row.queue, outcome)
        return Execution(
            row.id,
            row.name,
            row.queue,
            row.attempt,
            outcome if ok else "settle-failed",
            stop_reason=nack.stop_reason,
            error=nack.error,
            error_code=nack.error_code,
            duration=duration,
            abort_reason=abort_reason,
        )

    async def _nack(self, lease: Lease, nack: Nack) -> bool:
        """One fenced nack; a failure to write it is a settle failure, not a job failure (I6)."""
        lease.settling = True
        try:
            ok = await while_leased(
                self.keeper, lease, "nack", lambda: self.driver.job_nack(nack=nack, now=self.clock.now())
            )
        except SettleFailed as exc:
            settle_failed(self.keeper, lease, "nack", str(exc))
            return False
        if not ok:  # the fence refused: cancelled meanwhile, or the row is someone else's now
            if not lease.stopped:
                row = await self._get(lease.claim.job_id)
                if row is not None and row.state.value == "cancelled" and row.run == lease.claim.run:
                    self.keeper.release(lease)
                else:
                    self.keeper.report_lost(lease, f"the {nack.outcome} nack was refused: another claim holds the row")
            return False
        self.keeper.release(lease)
        if nack.outcome != "dead":
            self.poke()  # the row is due again at some time: an idle claim loop re-reads when
        return True

    async def _get(self, job_id: str) -> JobRow | None:
        try:
            return await self.driver.job_get(job_id=job_id)
        except Exception:
            return None
