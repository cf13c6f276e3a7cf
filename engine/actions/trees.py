"""The bulk retry of fan-ins: ``retry(id, children=True)`` for every dead job a filter matches.

A plain bulk retry moves rows in batches and replays what each job stored, so a fan-in dead of a
job it waited for meets its stored answer again and dies again, even when the same bulk retried
that job (its dry run counts them: ``BulkPlan.replays``). This one walks the matches newest first
and retries each with the dead jobs below it, its wait run again (engine/actions/jobs.py), one job
at a time: slower than a batch, and meant for the fan-ins among the dead.

Each job's retry is its own change, in its own transaction, so each adds its own audit log entry
(``job.retry``, ``job.retry_from_step``), as a retry with children by hand does; the run adds one
``bulk.retry`` entry as it ends, as a bulk retry does, naming its filter and what it changed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace

from engine.actions.bulk import BulkActions, check_bulk_options, pace, plan_bound
from engine.actions.jobs import JobActions
from engine.errors import X_INVALID_ARGUMENT, X_INVALID_STATE, X_KEY_HELD, X_NOT_FOUND, JobsError
from engine.introspect.filters import describe_filter
from engine.projections import ActionResult, BulkPlan, JobFilter
from engine.types import JobState

PAGE = 200  # matched ids read a page at a time, newest first (keyset on id)
# What one job's retry can refuse for that job alone (its state, gone meanwhile, too many jobs
# below it, its key held): said as its answer, and the bulk goes on.
_ITS_OWN = {X_INVALID_STATE, X_NOT_FOUND, X_INVALID_ARGUMENT, X_KEY_HELD}


class TreeActions(JobActions, BulkActions):
    async def retry_all_with_children(
        self,
        where: JobFilter | None = None,
        *,
        note: str | None = None,
        per_second: float | None = None,
        stop: asyncio.Event | None = None,
        plan: BulkPlan | None = None,
    ) -> AsyncIterator[ActionResult]:
        """Retry every dead job matching ``where`` with the dead jobs below it, newest first (a
        fan-out's children are newer than their parent, so they come back first and the parent's
        wait, run again, finds them ready). Each answer as it lands; a job no longer dead when
        reached (brought back with an earlier one, or by someone else) answers ``changed=False``,
        as does one refused (its key held, more jobs below it than a retry reaches), and the rest
        go on. With ``per_second`` at most that many jobs a second, those below included.
        ``stop``, once set, ends it before the next job (never within one job's retry). With
        ``plan`` (the bulk retry's dry run over this filter), only the jobs dead by its instant,
        and no more of them than it matched. Once it ends (ran out, stopped, left by its reader or
        failed), one ``bulk.retry`` audit log entry says what it changed (``detail``: the jobs
        changed, those below included; ``batches``: the matched jobs it reached)."""
        self._writable("bulk retry", note)
        where = self._bulk_filter("retry", where or JobFilter())
        upto, most = plan_bound("retry", where, plan)
        label = describe_filter(where)  # the filter as given: the run's audit entry names it
        where = replace(where, state=JobState.DEAD)
        check_bulk_options(per_second, stop)
        reached = changed = 0
        stopped = False
        failed: BaseException | None = None
        await self._open()
        cursor: str | None = None
        try:
            while True:
                page = await self.driver.job_page(
                    where=where, limit=PAGE, cursor=cursor, count_cap=1, budget_ms=self.budget_ms
                )
                for s in page.items:
                    if stop is not None and stop.is_set():
                        stopped = True
                        return
                    if most is not None and reached >= most:
                        return
                    if upto is not None and (s.finished_at is None or s.finished_at > upto):
                        continue  # dead since the dry run: not what it counted
                    reached += 1
                    t0 = self.clock.monotonic()
                    try:
                        res = await self.retry(s.id, note=note, children=True)
                    except JobsError as err:
                        if err.code not in _ITS_OWN:
                            raise  # the store's or the operator's, not this job's: every next one would meet it
                        res = ActionResult(
                            "retry", s.id, False, s.state, s.state, reason=f"{err.cause} (fix: {err.fix})"
                        )
                    changed += jobs_changed(res)
                    yield res
                    if per_second is not None:
                        spent = 1 + sum(a.changed for a in res.also)
                        await pace(self.clock, spent / per_second - (self.clock.monotonic() - t0), stop)
                if page.next_cursor is None:
                    return
                cursor = page.next_cursor
        except GeneratorExit:  # its reader left it (a break, aclose): what landed stays
            stopped = True
            raise
        except BaseException as exc:
            failed = exc
            raise
        finally:
            await self._summary(
                "retry", label, note, changed, failed, batches=reached, stopped=stopped, planned=most, children=True
            )


def jobs_changed(res: ActionResult) -> int:
    """How many jobs one answer of a retry with children changed: those below it it retried, and
    itself when it moved (a job refused answers the state it stayed in)."""
    return sum(a.changed for a in res.also) + (res.state is not res.previous)
