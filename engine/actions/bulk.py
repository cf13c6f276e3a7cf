"""Bulk retry, cancel and discard: a dry run (the plan: what would change, grouped by stop reason,
error code and tenant) and the apply, in batches newest first, optionally paced on the clock.
Each changed job's history entry names the filter the action matched; the run, once it ends, adds
one audit log entry (engine/audit.py) saying what it changed, rather than one a job."""

from __future__ import annotations

import asyncio
import inspect
import math
import shlex
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from engine.actions.base import DEFAULT_BATCH, OperatorBase
from engine.clock import Clock
from engine.errors import X_INVALID_ARGUMENT, X_INVALID_STATE, JobsError
from engine.introspect.filters import describe_filter, filter_options, scoped
from engine.projections import BulkAction, BulkPlan, BulkResult, JobFilter
from engine.records import AuditEntry
from engine.runtime.aio import first
from engine.types import LIVE_STATES, JobState

ACTIONS: tuple[BulkAction, ...] = ("retry", "cancel", "discard")
MAX_BATCH = 5_000  # rows a batch (one statement, one transaction) may hold


class BulkActions(OperatorBase):
    def _bulk_filter(self, action: BulkAction, where: JobFilter) -> JobFilter:
        if action not in ACTIONS:
            import difflib  # only a mistake pays its import

            near = difflib.get_close_matches(str(action), ACTIONS, n=1)
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"bulk action {action!r} is not one of {', '.join(ACTIONS)}",
                fix=f"ops.plan({(near or ['retry'])[0]!r}, where)",
            )
        where = scoped(where, self.tenant)
        if action in ("retry", "discard") and where.state not in (None, JobState.DEAD):
            raise not_dead_filter(action, where)
        if action == "cancel" and where.state is not None and where.state not in LIVE_STATES:
            raise JobsError(
                X_INVALID_STATE,
                cause=f"a bulk cancel applies to live jobs; the filter names state={where.state.value}, jobs that have "
                "already ended: nothing to cancel",
                fix=f"jobsctl ls {filter_options(where)}",
            )
        return where

    async def plan(self, action: BulkAction, where: JobFilter | None = None) -> BulkPlan:
        """The dry run: how many jobs the action would touch, grouped by stop reason, error code
        and tenant, and (retry) how many a live duplicate would dedupe away. Changes nothing, so
        it is allowed read-only."""
        where = self._bulk_filter(action, where or JobFilter())
        await self._open()
        return await self.driver.job_bulk_plan(
            action=action, where=where, now=self.clock.now(), budget_ms=self.budget_ms
        )

    async def bulk(
        self,
        action: BulkAction,
        where: JobFilter | None = None,
        *,
        note: str | None = None,
        per_second: float | None = None,
        batch_size: int = DEFAULT_BATCH,
        progress: Callable[[BulkResult], None] | None = None,
        stop: asyncio.Event | None = None,
        plan: BulkPlan | None = None,
    ) -> BulkResult:
        """Apply ``action`` to everything matching ``where``, newest first, in batches. With
        ``per_second`` the batches are paced (at most that many jobs a second) on the clock.
        ``progress`` is told the running totals after each batch. ``stop``, once set, ends the
        bulk between batches, never within one (a batch is one transaction): what landed stays,
        nothing more changes, and the answer says ``stopped``. With ``plan`` (this action's dry
        run over this filter, as confirmed), it applies to what that dry run counted: no job that
        came to match since (enqueued after it, for a cancel; dead after it, for a retry or a
        discard) and no more jobs than it matched."""
        self._writable(f"bulk {action}", note)
        where = self._bulk_filter(action, where or JobFilter())
        check_bulk_options(per_second, stop, progress)
        upto, most = plan_bound(action, where, plan)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= MAX_BATCH:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"batch_size={batch_size!r} must be a whole number from 1 to {MAX_BATCH:,} (a batch is one"
                " transaction: its rows stay locked until it commits, and each dead row it moves writes its"
                " group's count)",
                fix="batch_size=500",
            )
        size = batch_size if per_second is None else max(1, min(batch_size, int(per_second)))
        label = describe_filter(where)  # the history entries and the run's audit entry name the filter it matched
        await self._open()
        started = self.clock.now()
        changed = skipped = batches = 0
        before: str | None = None
        stopped = False
        failed: BaseException | None = None
        try:
            while True:
                if stop is not None and stop.is_set():
                    stopped = True
                    break
                t0 = self.clock.monotonic()
                limit = size if most is None else min(size, most - changed - skipped)
                batch = await self.driver.job_bulk_apply(
                    action=action,
                    where=where,
                    now=self.clock.now(),
                    actor=self.actor,
                    note=note,
                    label=label,
                    limit=limit,
                    before=before,
                    upto=upto,
                )
                batches += 1
                changed += len(batch.changed)
                skipped += batch.skipped
                if progress is not None:
                    progress(BulkResult(action, where, changed, skipped, started, self.clock.now(), per_second, note))
                if batch.scanned < limit or batch.last_id is None or most is not None and changed + skipped >= most:
                    break  # no row left below it, or as many as the dry run matched
                before = batch.last_id
                if per_second is not None:
                    # The pace: this batch may take size / per_second seconds in all.
                    await pace(self.clock, size / per_second - (self.clock.monotonic() - t0), stop)
        except BaseException as exc:
            failed = exc
            raise
        finally:  # what landed, whether it ran out of jobs, was stopped or failed midway
            await self._summary(action, label, note, changed, failed, batches=batches, stopped=stopped, planned=most)
        return BulkResult(action, where, changed, skipped, started, self.clock.now(), per_second, note, stopped)

    async def _summary(
        self,
        action: BulkAction,
        label: str,
        note: str | None,
        changed: int,
        failed: BaseException | None,
        *,
        planned: int | None,
        **detail: object,
    ) -> None:
        """A bulk run's one audit log entry, written as it ends when it changed a job: its filter,
        how many jobs changed, ``detail`` (its batches, whether it was stopped), the count of the
        dry run it was given and, when it failed midway, what it failed on. Each batch committed on
        its own, so this entry is a transaction of its own: one that cannot be written is raised,
        unless the run failed already, whose error is raised with this said on it."""
        if changed == 0:
            return
        said: dict[str, object] = {"changed": changed, **detail}
        if planned is not None:
            said["planned"] = planned
        if failed is not None:
            said["error"] = failed.code if isinstance(failed, JobsError) else type(failed).__name__
        entry = AuditEntry(self.clock.now(), self.actor, f"bulk.{action}", label, self.tenant, note, said)
        try:
            await self.driver.audit_add(entry=entry)
        except Exception as exc:
            if failed is None:
                raise
            failed.add_note(f"the run's audit log entry was not written: {exc}")


def not_dead_filter(action: BulkAction, where: JobFilter) -> JobsError:
    """A bulk retry or discard (of dead jobs) over a filter naming another state, with the next step
    for the jobs it names, the operator's other filter words kept: jobs still to run need no retry
    (their queue's why, or their list, says what they wait for) and a discard of them is a cancel;
    ended ones are not dead letters, so the same action over the dead ones of that filter."""
    state = where.state
    assert state is not None
    said = f"a bulk {action} applies to dead jobs; the filter names state={state.value}"
    if state not in LIVE_STATES:
        cause = f"{said}, jobs that ended without dying (retention prunes them)"
        fix = f"jobsctl {action} --all {filter_options(replace(where, state=JobState.DEAD))}"
    elif action == "discard":
        cause = f"{said}, jobs still to run: a cancel stops them (only a dead letter is discarded)"
        fix = f"jobsctl cancel --all {filter_options(where)}"
    else:
        cause = f"{said}, jobs still to run: none needs a retry (`jobsctl why ID` says what one waits for)"
        # Ready and parked jobs are what a queue's why explains (its oldest waiting age).
        waiting = state in (JobState.READY, JobState.PARKED) and where.queue is not None
        fix = f"jobsctl why {shlex.quote(str(where.queue))}" if waiting else f"jobsctl ls {filter_options(where)}"
    return JobsError(X_INVALID_STATE, cause=cause, fix=fix)


def plan_bound(action: BulkAction, where: JobFilter, plan: BulkPlan | None) -> tuple[datetime | None, int | None]:
    """What a confirmed dry run bounds an apply to: the instant it read (``upto``) and how many
    jobs it matched; (None, None) without one. A plan of another action or filter is refused:
    it would bound what it never counted."""
    if plan is None:
        return None, None
    if not isinstance(plan, BulkPlan) or plan.action != action or plan.filter != where:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"plan= is not the dry run of this bulk {action} over {describe_filter(where)}",
            fix=f"plan = await ops.plan({action!r}, where); await ops.bulk({action!r}, where, plan=plan)",
        )
    return plan.at, plan.matched


def check_bulk_options(
    per_second: float | None, stop: asyncio.Event | None = None, progress: Callable[..., object] | None = None
) -> None:
    """A bulk's pace, stop and progress, each refused before anything changes when it could not work."""
    if per_second is not None and (
        isinstance(per_second, bool) or not isinstance(per_second, (int, float)) or not 0 < per_second < math.inf
    ):
        raise JobsError(
            X_INVALID_ARGUMENT, cause=f"per_second={per_second!r} must be a positive rate", fix="per_second=50"
        )
    if stop is not None and not isinstance(stop, asyncio.Event):  # a threading.Event's wait would block the loop
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"stop={stop!r} is not an asyncio.Event",
            fix="stop = asyncio.Event(); ... stop.set()",
        )
    if progress is not None and (not callable(progress) or inspect.iscoroutinefunction(progress)):
        raise JobsError(  # a coroutine function's calls would never run: its totals said to no one
            X_INVALID_ARGUMENT,
            cause=f"progress={progress!r} is not a plain function (it is called after each batch, not awaited)",
            fix="progress=lambda r: print(r.changed, r.skipped)",
        )


async def pace(clock: Clock, seconds: float, stop: asyncio.Event | None) -> None:
    """The paced wait between two batches (or jobs), cut short by ``stop``."""
    if stop is None:
        await clock.sleep(seconds)
    elif not stop.is_set():
        await first(clock.sleep(seconds), stop.wait())
