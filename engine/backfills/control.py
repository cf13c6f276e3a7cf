"""``BackfillControl``: the gates, the projections and the operator actions of backfills (I22).

Pending = declared minus completed (a completed WRITE pass), per environment. A start is refused
by the first gate that applies, in this order, each before anything is written: unknown name,
environment, migration pending, running (one live pass per name), applied (a write rerun needs
``force``). Dry runs are never refused as applied: they write nothing. Every action names its
actor, is refused in read-only mode (X_READ_ONLY), and is audited: the ledger row names who
started a pass, the job's history who cancelled or retried it.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from engine.backfills.declare import (
    BackfillDefinition,
    Catalog,
    pass_job_name,
    resolve_environment,
)
from engine.backfills.passes import check_migration
from engine.backfills.views import BackfillView, Gate, Progress, Started, status_here
from engine.durations import relative
from engine.errors import (
    X_BACKFILL_APPLIED,
    X_BACKFILL_ENVIRONMENT,
    X_BACKFILL_PENDING,
    X_BACKFILL_RUNNING,
    X_HANDLER_FAILED,
    X_INVALID_ARGUMENT,
    X_INVALID_STATE,
    X_READ_ONLY,
    JobsError,
)
from engine.introspect.base import EngineView
from engine.newjobs import Opened
from engine.projections import ActionResult
from engine.records import BackfillRun, LivePass
from engine.text import check_note, storable
from engine.types import JobState

HISTORY = 50
UNFINISHED = ("queued", "running")  # a ledger row its pass has not finished


# How a live pass is, said in a refusal: queued until a worker claims it, else what it is doing.
_QUEUED = (JobState.READY, JobState.DELAYED)
_LIVE_AS = {
    JobState.READY: "queued",
    JobState.DELAYED: "queued (delayed)",
    JobState.RUNNING: "running",
    JobState.SUSPENDED: "waiting in a step",
    JobState.PARKED: "parked by a limit",
}


def when(at: datetime, now: datetime) -> str:
    """A past moment for a person: "at 2026-01-01 12:00:00 UTC (2d23h ago)", to the second."""
    return f"at {at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC ({relative((at - now).total_seconds())})"


def env_command(d: BackfillDefinition, environment: str, *flags: str, explicit: bool = False) -> str:
    """``d.command(*flags)`` run where ``environment`` is: with ``--env`` when it was given
    (``explicit``) or is not the one the command resolves by default ($JOBS_ENV, else
    development), so the line run as printed acts on the environment the answer was about."""
    line = d.command(*flags)
    try:
        default: str | None = resolve_environment()
    except JobsError:  # a $JOBS_ENV the command would refuse: the line names the environment itself
        default = None
    return f"{line} --env {shlex.quote(environment)}" if explicit or environment != default else line


def _raise(gate: Gate) -> None:
    raise JobsError(gate.code, cause=gate.cause, fix=gate.fix)


class BackfillControl(EngineView):
    """``BackfillControl(engine, catalog, actor="alice")``: ``pending``, ``views``, ``history``,
    ``gate``; ``start``, ``cancel``, ``retry``. ``environment``: this deployment's (default the
    engine's, then $JOBS_ENV)."""

    def __init__(
        self,
        engine: Any,
        backfills: Any,
        *,
        actor: str | None = None,
        read_only: bool = False,
        environment: str | None = None,
        clock: Any = None,
        note_fix: str = "note='INC-7: rerun after the fix'",
    ) -> None:
        super().__init__(engine, clock=clock)
        self.engine = engine
        self.catalog = Catalog.of(backfills)
        self.environment = resolve_environment(environment or getattr(engine, "environment", None))
        self.actor = actor.strip() if isinstance(actor, str) and actor.strip() else None
        self.read_only = read_only
        self._note_fix = note_fix  # how the caller gives a note: a keyword here, a field in the console

    def _writable(self, what: str, note: str | None = None) -> str:
        """The actor of an action, once its note is one PostgreSQL stores and this control may write."""
        check_note(note, what=what, fix=self._note_fix)
        if self.read_only:
            raise JobsError(
                X_READ_ONLY,
                cause=f"{what} was refused: this operator is read-only",
                fix="jobsctl backfill NAME --app MODULE --write",
            )
        if self.actor is None:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"{what}: every action names who took it",
                fix="BackfillControl(engine, backfills, actor='alice')",
            )
        return self.actor

    # --- reads -----------------------------------------------------------------------------------

    async def _applied(self) -> dict[str, BackfillRun]:
        await self._open()
        return {r.name: r for r in await self.driver.backfill_applied(environment=self.environment)}

    async def _live(self, names: list[str]) -> dict[str, LivePass]:
        """The live pass of each of ``names`` that has one, by backfill name."""
        await self._open()
        byjob = {pass_job_name(n): n for n in names}
        return {byjob[p.job_name]: p for p in await self.driver.backfill_live(job_names=list(byjob))}

    async def pending(self) -> list[BackfillDefinition]:
        """Declared here and never completed by a write pass here (running ones included)."""
        applied = await self._applied()
        return [d for d in self.catalog if d.applies_to(self.environment) and d.backfill not in applied]

    async def require_applied(self) -> None:
        """X_BACKFILL_PENDING for the first pending backfill: a deploy step or app start can gate on it."""
        for d in await self.pending():
            raise JobsError(
                X_BACKFILL_PENDING,
                cause=f"backfill {d.backfill!r} is declared and jobs.backfill holds no completed write pass "
                f"for it in {self.environment}",
                fix=env_command(d, self.environment, "--write"),
            )

    async def history(self, name: str | None = None, *, limit: int = HISTORY) -> list[BackfillRun]:
        names = None if name is None else [self.catalog.get(name).backfill]
        return await self._runs(names, limit)

    async def _runs(self, names: list[str] | None, limit: int, live: Iterable[str] = ()) -> list[BackfillRun]:
        """The ledger rows here, newest first, each unfinished one read with its job's end (a job
        in ``live``, known live already, is not read again)."""
        await self._open()
        runs = await self.driver.backfill_runs(names=names, environment=self.environment, limit=limit)
        known = set(live)
        return [
            await self._with_its_jobs_end(r) if r.status in UNFINISHED and r.job_id not in known else r for r in runs
        ]

    async def _with_its_jobs_end(self, run: BackfillRun) -> BackfillRun:
        """A ledger row its pass never finished, whose job has ended: the job died or was
        cancelled where no pass code ran to record it (a worker that does not know the backfill, a
        queued pass cancelled with `jobsctl cancel`, a last lease lost). It reads as the job's end;
        the row itself stays as written, and ``retry`` continues that job."""
        if run.job_id is None:
            return run
        job = await self.driver.job_get(job_id=run.job_id)
        if job is None:
            return replace(
                run, status="failed", error=f"its job {run.job_id} is gone (pruned); the pass never finished"
            )
        if job.state is JobState.DEAD:
            return replace(run, status="failed", finished_at=job.finished_at, error=job.last_error)
        if job.state is JobState.CANCELLED:
            return replace(run, status="cancelled", finished_at=job.finished_at, error="its job was cancelled")
        return run

    def progress_of(self, run: BackfillRun) -> Progress:
        # The rates are read over the pass's current run: a pass continued hours after it stopped
        # goes at its own pace from its resume (the batches before it, at the rows' mean size).
        since, before = run.resumed_at or run.started_at, run.resumed_swept
        elapsed = ((run.finished_at or self.clock.now()) - since).total_seconds()
        swept = run.swept - before
        rps = swept / elapsed if elapsed > 0 and swept > 0 else None
        bps = rps * run.batches / run.swept if rps is not None and run.batches else None
        remaining = None if run.planned is None else max(run.planned - run.swept, 0)
        eta = remaining / rps if remaining is not None and rps else None
        return Progress(
            run.id,
            run.job_id,
            run.dry_run,
            run.status,
            run.swept,
            run.batches,
            run.planned,
            remaining,
            bps,
            rps,
            eta,
            run.started_at,
        )

    async def progress(self, name: str) -> Progress | None:
        """The latest pass of ``name`` here, as progress (live while it runs)."""
        runs = await self.history(name, limit=1)
        return self.progress_of(runs[0]) if runs else None

    async def views(self) -> list[BackfillView]:
        """Every declared backfill, its status here, its live progress and the gate a write start meets now."""
        names = self.catalog.names()
        applied, passes = await self._applied(), await self._live(names)
        live = {n: p.job_id for n, p in passes.items()}
        runs = await self._runs(names, 10 * len(names) + 10, live.values())
        last: dict[str, BackfillRun] = {}
        for r in runs:
            last.setdefault(r.name, r)
        out = []
        for d in self.catalog:
            n = d.backfill
            lr = last.get(n)
            status = status_here(d.applies_to(self.environment), live.get(n), applied.get(n), lr)
            gate = self._gate_sync(d, write=True, force=False, applied=applied, live=passes)
            if gate is None and d.applies_to(self.environment):
                gate = await self._migration_gate(d)
            out.append(
                BackfillView(
                    n,
                    self.environment,
                    status,
                    d.applies_to(self.environment),
                    d.environments,
                    d.requires,
                    d.batch_size,
                    d.rate,
                    live.get(n),
                    applied.get(n),
                    lr,
                    None if lr is None else self.progress_of(lr),
                    gate,
                )
            )
        return out

    # --- gates -----------------------------------------------------------------------------------

    def _gate_sync(
        self,
        d: BackfillDefinition,
        *,
        write: bool,
        force: bool,
        applied: dict[str, BackfillRun],
        live: dict[str, LivePass],
    ) -> Gate | None:
        env = self.environment
        if not d.applies_to(env):
            target = d.environments[0]
            return Gate(
                X_BACKFILL_ENVIRONMENT,
                f"backfill {d.backfill!r} declares environments: {', '.join(d.environments)} and this process "
                f"resolved {env}; add {env!r} to that list if this deploy should sweep too",
                f"JOBS_ENV={target} {d.command('--write')}",
            )
        if d.backfill in live:
            job, state = live[d.backfill].job_id, live[d.backfill].state
            trace = (
                "it starts at a worker's next claim" if state in _QUEUED else "its step trace names the batch it is on"
            )
            return Gate(
                X_BACKFILL_RUNNING,
                f"backfill {d.backfill!r} already has its one live pass, {_LIVE_AS.get(state, state.value)}: {trace}",
                f"jobsctl show {job}",
            )
        done = applied.get(d.backfill)
        if write and not force and done is not None:
            at = "at an unknown time" if done.finished_at is None else when(done.finished_at, self.clock.now())
            return Gate(
                X_BACKFILL_APPLIED,
                f"backfill {d.backfill!r} completed as run {done.id} {at} in {env}; a forced rerun writes "
                "a NEW ledger row and never edits that one",
                env_command(d, env, "--write", "--force"),
            )
        return None

    async def _migration_gate(self, d: BackfillDefinition) -> Gate | None:
        if d.requires is None:
            return None

        def read() -> None:
            conn = d.owner.open_connection()
            try:
                check_migration(d, conn)
            finally:
                if conn is not None:
                    conn.close()

        try:
            await asyncio.to_thread(read)
        except JobsError as err:
            return Gate(err.code, err.cause, err.fix)
        except Exception as exc:  # the app's connect or migrations raised: its gate, said, not a traceback
            cause = f"reading the app's migration ledger for backfill {d.backfill!r} raised {type(exc).__name__}: {' '.join(str(exc).split())}"
            return Gate(
                X_HANDLER_FAILED,
                storable(cause),
                "check that the connect= and migrations= given to Backfills() reach the app's database",
            )
        return None

    async def gate(self, name: str, *, write: bool = True, force: bool = False) -> Gate | None:
        """The gate that would refuse this start now, or None (an unknown name raises X_BACKFILL_UNKNOWN)."""
        d = self.catalog.get(name)
        applied, live = await self._applied(), await self._live([d.backfill])
        if not d.applies_to(self.environment):
            return self._gate_sync(d, write=write, force=force, applied=applied, live=live)
        return await self._migration_gate(d) or self._gate_sync(d, write=write, force=force, applied=applied, live=live)

    # --- actions ---------------------------------------------------------------------------------

    async def start(self, name: str, *, write: bool = False, force: bool = False) -> Started:
        """Enqueue a pass (a dry run unless ``write``) after every gate; its ledger row is written
        only when the pass is really enqueued."""
        actor = self._writable("starting a backfill pass")
        d = self.catalog.get(name)
        gate = await self.gate(name, write=write, force=force)
        if gate is not None:
            _raise(gate)
        run_id = self.engine.ids.new()
        inp = {
            "run": run_id,
            "environment": self.environment,
            "write": write,
            "forced": force,
            "actor": actor,
            "app_version": d.owner.version,
        }
        (res,) = await self.engine.aenqueue_many([Opened(d, inp)])  # past every gate
        if res.deduped:  # another starter won the race since the gate read: its pass is the answer
            raced = {d.backfill: LivePass(res.id, pass_job_name(d.backfill), res.state)}
            lost = self._gate_sync(d, write=write, force=force, applied={}, live=raced)
            assert lost is not None  # a live pass is always a gate
            _raise(lost)
        await self.driver.backfill_open(
            run=BackfillRun(
                run_id,
                d.backfill,
                self.environment,
                res.id,
                "queued",
                not write,
                force,
                self.clock.now(),
                d.owner.version,
                actor,
            )
        )
        return Started(d.backfill, run_id, res.id, self.environment, not write, force)

    async def _latest(self, name: str) -> BackfillRun:
        runs = await self.history(name, limit=1)
        if not runs or runs[0].job_id is None:
            d = self.catalog.get(name)
            raise JobsError(
                X_INVALID_STATE,
                cause=f"backfill {name!r} has no pass in {self.environment}",
                fix=env_command(d, self.environment),
            )
        return runs[0]

    async def cancel(self, name: str, *, note: str | None = None) -> ActionResult:
        """Cancel the live pass of ``name``: its rate wait and its next batch see it; the ledger says cancelled."""
        actor = self._writable("cancelling a backfill pass", note)
        d = self.catalog.get(name)
        live = await self._live([d.backfill])
        run = await self._latest(name)
        job_id = live[d.backfill].job_id if d.backfill in live else run.job_id
        assert job_id is not None
        res = await self.driver.job_cancel(job_id=job_id, tenant=None, now=self.clock.now(), actor=actor, note=note)
        if res is None or not res.cancelled:
            prev = res.previous if res is not None else JobState.COMPLETED
            return ActionResult(
                "cancel", job_id, False, prev, prev, reason=f"the pass is {prev.value}: nothing to cancel"
            )
        if run.job_id == job_id:
            await self.driver.backfill_finish(
                run_id=run.id,
                outcome="cancelled",
                swept=None,
                batches=None,
                error=f"cancelled by {actor}",
                now=self.clock.now(),
            )
        return ActionResult(
            "cancel", job_id, True, res.previous, JobState.CANCELLED, reason="its worker stops it before its next batch"
        )

    async def retry(self, name: str, *, note: str | None = None) -> ActionResult:
        """Resume the latest failed or cancelled pass of ``name`` from the batch it stopped on."""
        actor = self._writable("retrying a backfill pass", note)
        run = await self._latest(name)
        if run.status not in ("failed", "cancelled", "stalled", "running", "queued"):
            raise JobsError(
                X_INVALID_STATE,
                cause=f"the latest pass of {name!r} is {run.status}; only a failed or cancelled pass continues",
                fix=env_command(self.catalog.get(name), self.environment, "--history"),  # its passes, newest first
            )
        assert run.job_id is not None
        res = await self.driver.backfill_pass_resume(job_id=run.job_id, now=self.clock.now(), actor=actor, note=note)
        if res is None:
            raise JobsError(
                X_INVALID_STATE,
                cause=f"the job {run.job_id} of pass {run.id} is gone (pruned)",
                fix=env_command(self.catalog.get(name), self.environment, "--write"),
            )
        return res  # a pass made ready wakes its queue's idle workers (the statement's NOTIFY)
