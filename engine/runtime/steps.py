"""Durable steps and suspension: ``ctx.step.run / enqueue / sleep / sleep_until / wait_for_event / wait_for_jobs``.

A step's result is persisted BEFORE the step returns (I9), so a replay (a retry, or a resume after
a sleep or an event) runs the handler from the top and every completed step answers its stored
result without running again. A sleep or a wait raises `StepSuspension` (I7), which the runner
turns into the driver's "suspend" nack. Every write is refused once the run's signal is aborted,
and the driver fences it on the claim too, so a stale run can never write (I10).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable
from contextlib import nullcontext
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from engine.clock import Clock, later, utc
from engine.codec import check_json
from engine.drivers.base import Driver
from engine.errors import (
    X_ABORTED,
    X_DUPLICATE_STEP,
    X_INVALID_ARGUMENT,
    X_STEP_TIMEOUT,
    JobsError,
)
from engine.retry import error_text, register_error_retry
from engine.runtime import fanin, fanout
from engine.runtime.signal import RunSignal, resolve_once
from engine.runtime.step_checks import (
    check_event_name,
    check_match,
    check_sleep,
    check_step_name,
    check_wait_timeout,
)
from engine.runtime.step_signal import StepSignal, invoke_step
from engine.runtime.suspend import StepSuspension
from engine.types import Claim, JobRow, StepKind, StepStatus, StoredStep

if TYPE_CHECKING:
    from engine.newjobs import Enqueue
    from engine.tracing import Tracing

T = TypeVar("T")

# A duplicate step name is a bug in the handler: every retry would hit it again.
register_error_retry({X_DUPLICATE_STEP: "terminal"})


class StepApi:
    def __init__(
        self,
        *,
        driver: Driver,
        claim: Claim,
        row: JobRow,
        clock: Clock,
        signal: RunSignal,
        step_timeout: float | None,
        event_poll: float,
        loop: asyncio.AbstractEventLoop | None = None,
        tracing: Tracing | None = None,
        engine: Callable[[], Any] | None = None,
    ) -> None:
        self.driver, self.claim, self.row, self.clock = driver, claim, row, clock
        self._engine = engine  # ctx.engine's maker: what a step's enqueue builds its jobs with
        self.tracing = tracing  # a run step that runs is a span of its own (engine/tracing.py)
        self.signal, self.step_timeout, self.event_poll = signal, step_timeout, event_poll
        self._stored: dict[str, StoredStep] | None = None
        self._load_lock = asyncio.Lock()
        # The run's loop: a sync handler's thread hands its step calls to it. Given by the runner,
        # which builds this on first use of ctx.step, possibly from that thread.
        self._loop: asyncio.AbstractEventLoop | None = loop
        if loop is None:
            try:
                self._loop = asyncio.get_running_loop()
            except RuntimeError:
                self._loop = None
        self._seen: list[str] = []  # step names reached by this run, in call order
        self._next_seq = 1

    def _dispatch(self, coro: Coroutine[Any, Any, T]) -> Any:
        """On the run's loop: the awaitable (``await ctx.step.run(...)``). In a sync handler's
        thread: the answer, blocking that thread while the loop runs the step, so a sync handler
        writes ``ctx.step.run(...)`` and no call can silently do nothing."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            return coro
        if self._loop is None or self._loop.is_closed():
            coro.close()
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause="ctx.step was called outside its run (no event loop holds the run)",
                fix='async def handler(ctx, inp): return await ctx.step.run("fetch", fetch)',
            )
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    @property
    def reached(self) -> tuple[str, ...]:
        """The steps this run has reached so far, in call order."""
        return tuple(self._seen)

    # --- the store -------------------------------------------------------------------------

    async def _load(self) -> dict[str, StoredStep]:
        # One read per run: only this claimant writes the job's steps, so the cache stays true.
        async with self._load_lock:
            if self._stored is None:
                # A job's first claim has nothing stored: every step is written by a claimed run.
                steps = [] if self.claim.run == 1 else await self.driver.step_load(job_id=self.claim.job_id)
                self._stored = {s.name: s for s in steps}
                self._next_seq = max((s.seq for s in steps), default=0) + 1
        return self._stored

    async def _begin(self, name: str, kind: StepKind) -> tuple[StoredStep | None, int]:
        """Claim ``name`` for this run; answer its stored record (if any) and its seq."""
        check_step_name(name)
        if name in self._seen:
            raise JobsError(
                X_DUPLICATE_STEP,
                cause=f"job {self.row.name!r} reached step {name!r} twice in one run; step names are unique within "
                f"a run",
                fix=f'ctx.step.run(f"{name}-{{i}}", ...)',
            )
        self._seen.append(name)
        stored = await self._load()
        s = stored.get(name)
        if s is not None and s.kind != kind:
            raise JobsError(
                X_DUPLICATE_STEP,
                cause=f"step {name!r} of job {self.claim.job_id} was recorded as a {s.kind} step; this run calls it "
                f"as a {kind} step",
                fix=f'ctx.step.{_CALL[kind]}("{name}-{kind}", ...)',
            )
        if s is not None:
            return s, s.seq
        seq = self._next_seq
        self._next_seq += 1
        return None, seq

    def _step(
        self,
        name: str,
        seq: int,
        kind: StepKind,
        status: StepStatus,
        started_at: datetime,
        *,
        finished: bool = True,
        result: Any = None,
        error: str | None = None,
        wait: dict[str, Any] | None = None,
        event_id: str | None = None,
    ) -> StoredStep:
        return StoredStep(
            job_id=self.claim.job_id,
            name=name,
            seq=seq,
            kind=kind,
            status=status,
            attempt=self.row.attempt,
            run=self.claim.run,
            started_at=started_at,
            finished_at=self.clock.now() if finished else None,
            result=result,
            error=error,
            wait=wait,
            event_id=event_id,
        )

    async def _write(self, step: StoredStep) -> None:
        self.signal.raise_if_aborted(f"write of step {step.name!r}")
        if not await self.driver.step_save(claim=self.claim, step=step):
            raise self._lost(step.name)
        assert self._stored is not None
        self._stored[step.name] = step

    def _lost(self, name: str) -> JobsError:
        return JobsError(
            X_ABORTED,
            cause=f"step {name!r} of job {self.claim.job_id} was not written: run {self.claim.run} of "
            f"{self.claim.worker} no longer holds the job (cancelled, timed out or re-delivered)",
            fix="if ctx.signal.aborted: return",
        )

    # --- run -------------------------------------------------------------------------------

    def run(self, name: str, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` (sync, async, or returning an awaitable) once per job: its JSON result is
        stored before this returns, and a replay answers it without calling ``fn`` again.
        A plain function runs in a thread, so blocking I/O does not stall the worker's loop."""
        return self._dispatch(self._run(name, fn))

    async def _run(self, name: str, fn: Callable[[], Any]) -> Any:
        if not callable(fn):
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"step {name!r} was given {fn!r}, not a callable",
                fix=f"ctx.step.run({name!r}, lambda: work())",
            )
        s, seq = await self._begin(name, "run")
        if s is not None and s.status == "completed":
            return s.result
        self.signal.raise_if_aborted(f"start of step {name!r}")
        started = self.clock.now()
        try:
            with self.tracing.step(name, seq) if self.tracing is not None else nullcontext():
                value = check_json(await self._call(name, fn), what=f"result of step {name!r}", job=self.row.name)
        except Exception as exc:
            # Recorded, then propagated: it is this attempt's failure under the job's retry policy.
            await self._write(self._step(name, seq, "run", "failed", started, error=error_text(exc)))
            raise
        await self._write(self._step(name, seq, "run", "completed", started, result=value))
        return value

    async def _call(self, name: str, fn: Callable[[], Any]) -> Any:
        """``fn`` raced against the run's signal and the step's ceiling, which resolve one future
        (no task of their own); the loser is cancelled."""
        stop: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        # The timer is scheduled first so that its deadline is armed before the step starts.
        ceiling, late = self.step_timeout, lambda: resolve_once(stop, "step-timeout")
        timer = self.clock.call_later(ceiling, late) if ceiling else None
        self.signal.resolve(stop)
        sig = StepSignal()  # the step's own: a sync step in its thread sees it (step_signal.py)
        task = asyncio.ensure_future(invoke_step(fn, sig, self.row, name))
        try:
            await asyncio.wait((task, stop), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            self.signal.forget(stop)
            if timer is not None:
                timer.cancel()
        if task.done():
            return task.result()
        aborted = self.signal.aborted
        sig.abort(self.signal.reason or "aborted" if aborted else "step-timeout")
        task.cancel()
        task.add_done_callback(_retrieve)  # a sync step's thread cannot be stopped: it is abandoned
        if aborted:
            self.signal.raise_if_aborted(f"step {name!r}")
        raise JobsError(
            X_STEP_TIMEOUT,
            cause=f"step {name!r} of job {self.row.name!r} ran past step_timeout={self.step_timeout:g}s and was "
            f"cancelled",
            fix=f"@job(name={self.row.name!r}, step_timeout={2 * (self.step_timeout or 1):g})",
        )

    # --- enqueue ---------------------------------------------------------------------------

    def enqueue(self, name: str, jobs: Iterable[Enqueue]) -> Any:
        """Enqueue ``jobs`` once per job, answering their ids in the order given: the jobs and
        this step (their ids) are one commit, so a replay answers the ids and enqueues nothing
        (engine/runtime/fanout.py)."""
        return self._dispatch(self._enqueue(name, jobs))

    async def _enqueue(self, name: str, jobs: Any) -> Any:
        specs = fanout.check_specs(name, jobs)
        s, seq = await self._begin(name, "enqueue")
        if s is not None:  # an enqueue step is stored once, completed
            return s.result
        if self._engine is None:
            raise fanout.no_engine(f"ctx.step.enqueue({name!r})")
        from engine.newjobs import new_jobs, sent  # a worker whose runs never enqueue never loads it

        self.signal.raise_if_aborted(f"start of step {name!r}")
        eng, now = self._engine(), self.clock.now()
        step = self._step(name, seq, "enqueue", "completed", now)
        out = await sent(
            eng.tracing,
            new_jobs(specs, eng.ids, now, None),
            len(specs),
            lambda rows, _: self.driver.step_enqueue(claim=self.claim, step=step, jobs=rows, now=now),
        )
        if out is None:
            raise self._lost(name)
        ids = [r.id for r in out]
        assert self._stored is not None
        self._stored[name] = replace(step, result=ids)
        return ids

    # --- sleep -----------------------------------------------------------------------------

    def sleep(self, name: str, seconds: float) -> Any:
        """Suspend the run for ``seconds`` (no attempt burned); the end is fixed when first reached."""
        return self._dispatch(self._sleep(name, seconds))

    async def _sleep(self, name: str, seconds: float) -> None:
        check_sleep(name, seconds)
        s, seq = await self._begin(name, "sleep")
        if s is not None:
            return await self._sleep_resume(s)
        until = later(
            self.clock.now(),
            seconds,
            what=f"step {name!r}: a sleep of {seconds!r} seconds",
            fix=f"await ctx.step.sleep_until({name!r}, datetime(2099, 1, 1, tzinfo=UTC))",
        )
        await self._sleep_first(name, seq, until)

    def sleep_until(self, name: str, when: datetime) -> Any:
        """Suspend the run until ``when`` (an aware datetime)."""
        return self._dispatch(self._sleep_until(name, when))

    async def _sleep_until(self, name: str, when: datetime) -> None:
        if not isinstance(when, datetime) or when.tzinfo is None:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"step {name!r}: sleep_until({when!r}) needs an aware datetime",
                fix=f"await ctx.step.sleep_until({name!r}, datetime.now(UTC) + timedelta(days=1))",
            )
        s, seq = await self._begin(name, "sleep")
        if s is not None:
            return await self._sleep_resume(s)
        await self._sleep_first(name, seq, utc(when))

    async def _sleep_first(self, name: str, seq: int, until: datetime) -> None:
        now = self.clock.now()
        wait = {"kind": "sleep", "step": name, "until": until.isoformat()}
        if until <= now:
            await self._write(self._step(name, seq, "sleep", "completed", now, wait=wait))
            return
        await self._write(self._step(name, seq, "sleep", "waiting", now, finished=False, wait=wait))
        raise StepSuspension(run_at=until, wait=wait)

    async def _sleep_resume(self, s: StoredStep) -> None:
        if s.status == "completed":
            return
        assert s.wait is not None
        until = datetime.fromisoformat(s.wait["until"])
        if self.clock.now() < until:
            raise StepSuspension(run_at=until, wait=s.wait)
        await self._write(self._step(s.name, s.seq, "sleep", "completed", s.started_at, wait=s.wait))

    # --- waits -----------------------------------------------------------------------------

    def _wait_as_reached(
        self, name: str, s: StoredStep | None, now: datetime, timeout: float | None, fix: str, what: dict[str, Any]
    ) -> tuple[dict[str, Any], datetime, datetime | None]:
        """A wait's record (``what`` it waits for, its step, its timeout), when it started and when
        it times out: made now when first reached, else as first reached, so a replay neither
        restarts the timeout nor changes what is waited for."""
        if s is not None:
            assert s.wait is not None
            at = s.wait["timeout_at"]
            return s.wait, s.started_at, None if at is None else datetime.fromisoformat(at)
        timeout_at = None if timeout is None else later(now, timeout, what=f"step {name!r}: {timeout=}", fix=fix)
        wait = {**what, "step": name, "timeout_at": None if timeout_at is None else timeout_at.isoformat()}
        return wait, now, timeout_at

    # --- wait for an event -----------------------------------------------------------------

    def wait_for_event(
        self, name: str, *, event: str, match: dict[str, Any] | None = None, timeout: float | None = None
    ) -> Any:
        """Suspend until an event named ``event`` of this job's tenant whose payload contains
        ``match`` exists (sent at or after the job was created, so one sent early is not lost);
        answer its payload, or None once ``timeout`` seconds pass without one."""
        return self._dispatch(self._wait_for_event(name, event=event, match=match, timeout=timeout))

    async def _wait_for_event(
        self, name: str, *, event: str, match: dict[str, Any] | None, timeout: float | None
    ) -> Any:
        check_event_name(event)
        pattern = check_match(match)
        fix = f"await ctx.step.wait_for_event({name!r}, event={event!r}, timeout=86400)"
        check_wait_timeout(name, timeout, fix)
        s, seq = await self._begin(name, "event")
        if s is not None and s.status == "completed":
            return s.result
        if s is not None and s.status == "timed-out":
            return None
        now = self.clock.now()
        wait, started, timeout_at = self._wait_as_reached(
            name, s, now, timeout, fix, {"kind": "event", "event": event, "match": pattern}
        )
        found = await self.driver.event_find(
            job_id=self.claim.job_id,
            name=wait["event"],
            tenant=self.row.tenant,
            match=wait["match"],
            since=self.row.created_at,
            now=now,
        )
        if found is not None:
            await self._write(
                self._step(name, seq, "event", "completed", started, result=found.payload, wait=wait, event_id=found.id)
            )
            return found.payload
        if timeout_at is not None and now >= timeout_at:
            await self._write(self._step(name, seq, "event", "timed-out", started, wait=wait))
            return None
        if s is None:
            await self._write(self._step(name, seq, "event", "waiting", started, finished=False, wait=wait))
        wake = now + timedelta(seconds=self.event_poll)
        raise StepSuspension(run_at=wake if timeout_at is None else min(wake, timeout_at), wait=wait)

    # --- wait for other jobs ----------------------------------------------------------------

    def wait_for_jobs(self, name: str, ids: list[str], *, timeout: float | None = None, fail_fast: bool = False) -> Any:
        """Suspend until every job ``ids`` names has settled (completed, dead or cancelled), or with
        ``fail_fast`` until one died or was cancelled; answer each one's outcome (id, name, state,
        result, error_code, error, stop_reason) in the order given, or None once ``timeout``
        seconds pass first (engine/runtime/fanin.py)."""
        return self._dispatch(self._wait_for_jobs(name, ids, timeout=timeout, fail_fast=fail_fast))

    async def _wait_for_jobs(self, name: str, ids: Any, *, timeout: float | None, fail_fast: Any) -> Any:
        job_ids = fanin.check_job_ids(name, ids, self.claim.job_id)
        what = {"kind": "jobs", "jobs": job_ids, **fanin.check_fail_fast(name, fail_fast)}
        fix = f"await ctx.step.wait_for_jobs({name!r}, ids, timeout=3600)"
        check_wait_timeout(name, timeout, fix)
        s, seq = await self._begin(name, "jobs")
        if s is not None and s.status == "completed":
            return s.result
        if s is not None and s.status == "timed-out":
            return None
        now = self.clock.now()
        wait, started, timeout_at = self._wait_as_reached(name, s, now, timeout, fix, what)
        rows = {r.id: r for r in await self.driver.job_get_many(job_ids=wait["jobs"])}
        for jid in wait["jobs"]:
            if jid not in rows:
                raise fanin.gone(name, jid, first=s is None)
        if fanin.goes_on(wait, [rows[jid] for jid in wait["jobs"]]):
            result = [fanin.outcome(rows[jid]) for jid in wait["jobs"]]
            await self._write(self._step(name, seq, "jobs", "completed", started, result=result, wait=wait))
            return result
        if timeout_at is not None and now >= timeout_at:
            await self._write(self._step(name, seq, "jobs", "timed-out", started, wait=wait))
            return None
        if s is None:
            await self._write(self._step(name, seq, "jobs", "waiting", started, finished=False, wait=wait))
        look = fanin.next_look(started, now, self.event_poll)
        raise StepSuspension(run_at=look if timeout_at is None else min(look, timeout_at), wait=wait)


_CALL = {"run": "run", "sleep": "sleep", "event": "wait_for_event", "jobs": "wait_for_jobs", "enqueue": "enqueue"}


def _retrieve(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()  # read, so a late failure of an abandoned step is not reported as unhandled
