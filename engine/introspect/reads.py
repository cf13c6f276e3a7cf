"""The Introspector: the read models the CLI and the console share.

Every read runs under a time budget (a statement timeout on Postgres), so watching a database
never loads it; a count that would be expensive answers capped and says so (`Count.kind`).
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from engine.errors import X_INVALID_ARGUMENT, X_NOT_FOUND, X_UNKNOWN_QUEUE, JobsError
from engine.ids import parse_id
from engine.introspect.base import MAX_CANDIDATES, MIN_FRAGMENT, EngineView, id_fragment, load_job
from engine.introspect.filters import scoped
from engine.introspect.view_options import check_view_options
from engine.introspect.why import is_stale, job_causes, stale_window
from engine.introspect.why_queue import queue_causes
from engine.projections import (
    DeadLetters,
    JobDetail,
    JobFilter,
    JobPage,
    JobSummary,
    LimitState,
    NextRetry,
    QueuePause,
    QueueStats,
    QueuesView,
    WhyReport,
    WorkersView,
    WorkerView,
    latest_fix,
)
from engine.series import QueueSeries
from engine.types import LIVE_STATES, JobRow, JobState, waited_out

if TYPE_CHECKING:  # the worker area's registry row; only named in annotations here
    from engine.records import StepRecord, WorkerRecord

DEFAULT_BUDGET = 0.5  # seconds a projection may take: the console's default
DEFAULT_COUNT_CAP = 10_000  # past this a count answers "at least" instead of counting on
DEFAULT_PAGE_COUNT_CAP = 1_000  # a list's "N matching": a page must stay cheap (< 20 ms)
# Seconds without a heartbeat before a worker is shown stale, at the least: one that beats seldom
# is given more than REAP_BEATS of its own heartbeats (why.py, stale_window).
DEFAULT_STALE_AFTER = 30.0
MAX_PAGE = 500
NEAR = 0.8  # how alike a mistyped id and a job's must be to be offered (one typo in 6 digits: 0.83)


class Introspector(EngineView):
    """``Introspector(engine, budget=0.5)``: ``await intro.queues()``, ``.queue_series(name)``, ``.jobs(where)``, ``.job(id)``,
    ``.dead_letters(where)``, ``.workers()``, ``.why_job(id)``, ``.why_queue(name)``.

    ``registry``: the app's jobs (engine.jobs.Registry), when known, lets job detail say when the
    next retry would run. ``tenant``: a scope; every read sees only that tenant's jobs (I25).
    """

    def __init__(
        self,
        engine: Any,
        *,
        budget: float = DEFAULT_BUDGET,
        count_cap: int = DEFAULT_COUNT_CAP,
        page_count_cap: int = DEFAULT_PAGE_COUNT_CAP,
        stale_after: float = DEFAULT_STALE_AFTER,
        registry: Any = None,
        tenant: str | None = None,
        clock: Any = None,
    ) -> None:
        check_view_options(budget=budget, stale_after=stale_after, count_cap=count_cap, page_count_cap=page_count_cap)
        super().__init__(engine, clock=clock, tenant=tenant)
        self.budget = float(budget)
        self.count_cap = count_cap
        self.page_count_cap = min(page_count_cap, count_cap)
        self.stale_after = float(stale_after)
        self.registry = registry

    @property
    def budget_ms(self) -> int:
        return max(1, int(self.budget * 1000))

    # --- helpers from other areas (workers, limits) ---------------------------------------------

    async def _workers(self, now: datetime) -> list[WorkerRecord]:
        return list(await self.driver.worker_list(now=now))

    async def _pause(self, queue: str) -> QueuePause:
        return await self.driver.queue_get(queue=queue)  # type: ignore[attr-defined, no-any-return]

    # --- queues --------------------------------------------------------------------------------

    async def queues(self) -> QueuesView:
        if self.tenant is not None:
            # Queue counts, ages and throughput are the fleet's: a tenant scope would leak the
            # other tenants' work through them (I25), so it is refused rather than ignored.
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"queue counts are fleet-wide; this view is scoped to tenant {self.tenant!r} and would show "
                "other tenants' work (this tenant's jobs of a queue: intro.jobs(JobFilter(queue='billing')))",
                fix="Introspector(engine)",
            )
        await self._open()
        now = self.clock.now()
        stats = await self.driver.queue_stats(now=now, count_cap=self.count_cap, budget_ms=self.budget_ms)  # type: ignore[attr-defined]
        workers = await self._workers(now)
        stats = [self._with_workers(q, workers) for q in stats]
        named = {q.name for q in stats}
        extra = sorted({name for w in workers for name in w.queues} - named)
        stats += [self._with_workers(_empty_queue(name), workers) for name in extra]
        stats.sort(key=lambda q: q.name)
        return QueuesView(now, tuple(stats))

    async def queue_series(self, queue: str) -> QueueSeries:
        """One queue's last hour minute by minute: completions, jobs gone dead, and the wait and
        run percentiles of its completions (engine/series.py). Fleet-wide like ``queues``."""
        if self.tenant is not None:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"a queue's figures are fleet-wide; this view is scoped to tenant {self.tenant!r} and would "
                "show other tenants' work",
                fix="Introspector(engine) for the fleet",
            )
        if not isinstance(queue, str) or not queue.strip():
            raise JobsError(X_INVALID_ARGUMENT, cause=f"queue={queue!r} is empty", fix="intro.queue_series('billing')")
        await self._open()
        return await self.driver.queue_series(queue=queue.strip(), now=self.clock.now(), budget_ms=self.budget_ms)  # type: ignore[attr-defined, no-any-return]

    def _with_workers(self, q: QueueStats, workers: list[WorkerRecord]) -> QueueStats:
        live = [w for w in workers if q.name in w.queues and not is_stale(w, self.stale_after)]
        return replace(
            q, workers=len(live), slots_total=sum(w.concurrency for w in live), slots_in_use=sum(w.in_use for w in live)
        )

    # --- jobs ------------------------------------------------------------------------------------

    async def jobs(self, where: JobFilter | None = None, *, limit: int = 50, cursor: str | None = None) -> JobPage:
        if not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"limit={limit!r} must be between 1 and {MAX_PAGE}",
                fix="jobsctl ls --limit 50",
            )
        if cursor is not None:
            checked = parse_id(cursor)
            if checked is None:
                raise JobsError(
                    X_INVALID_ARGUMENT,
                    cause=f"cursor {cursor!r} is not one a page answered; without one, the list starts from its first page",
                    fix="jobsctl ls",
                )
            cursor = checked
        await self._open()
        return await self.driver.job_page(  # type: ignore[attr-defined]
            where=scoped(where or JobFilter(), self.tenant),
            limit=limit,
            cursor=cursor,
            count_cap=self.page_count_cap,
            budget_ms=self.budget_ms,
        )

    async def job(self, job_id: str, *, tenant: str | None = None) -> JobDetail:
        tenant = self._tenant(tenant)
        row = await load_job(self, job_id, tenant, budget_ms=self.budget_ms)
        attempts = await self.driver.job_attempts(job_id=row.id)
        history = await self.driver.job_history(job_id=row.id)
        steps = tuple(await self.driver.step_list(job_id=row.id))
        awaited = await self._awaited(row)
        why = await self._why(row, awaited, fix=latest_fix(attempts))
        if awaited is None and any(s.kind in ("jobs", "enqueue") for s in steps):  # not waiting now
            awaited = await self._awaited_last(row.id)
        return JobDetail(
            job=row,
            attempts=tuple(attempts),
            steps=steps,
            history=tuple(history),
            next_retry=self._next_retry(row, why.at, _replayed(steps, awaited or [])),
            why=why,
            awaited=tuple(JobSummary.of(r) for r in awaited or ()),
            parents=await self._parents(row.id),
        )

    def _next_retry(self, row: JobRow, now: datetime, replayed: str | None = None) -> NextRetry | None:
        if row.state in (JobState.COMPLETED, JobState.CANCELLED):
            return None
        if row.state is JobState.DEAD:
            # The stop reason is the why's and the error's: said once.
            return NextRetry(
                1,
                row.max_attempts,
                None,
                row.max_attempts <= 1,
                replayed or f"an operator retry starts again at attempt 1 of {row.max_attempts}",
            )
        # Attempts burned so far; a running job's current attempt is already counted.
        nxt = row.attempt + 1
        last = nxt >= row.max_attempts
        policy = None
        if self.registry is not None and row.name in self.registry:
            policy = self.registry.get(row.name).retry
        if row.state is JobState.RUNNING:
            if row.attempt >= row.max_attempts:
                return NextRetry(
                    row.attempt,
                    row.max_attempts,
                    None,
                    True,
                    f"attempt {row.attempt} of {row.max_attempts} is the last: a failure makes it dead",
                )
            at = now + timedelta(seconds=policy.base_delay(row.attempt)) if policy is not None else None
            when = f" at about {at:%H:%M:%S}" if at else ""
            return NextRetry(
                nxt, row.max_attempts, at, last, f"if this attempt fails: attempt {nxt} of {row.max_attempts}{when}"
            )
        return NextRetry(
            nxt,
            row.max_attempts,
            row.run_at,
            last,
            f"next run is attempt {nxt} of {row.max_attempts}, due {row.run_at:%Y-%m-%d %H:%M:%S}",
        )

    # --- dead letters and workers --------------------------------------------------------------

    async def dead_letters(self, where: JobFilter | None = None) -> DeadLetters:
        where = scoped(where or JobFilter(), self.tenant)
        if where.state is not None and where.state is not JobState.DEAD:
            where = replace(where, state=None)  # dead letters are dead by definition
        await self._open()
        return await self.driver.dead_groups(  # type: ignore[attr-defined]
            where=where,
            now=self.clock.now(),
            budget_ms=self.budget_ms,
        )

    async def workers(self) -> WorkersView:
        await self._open()
        now = self.clock.now()
        recs = await self._workers(now)
        views = tuple(
            WorkerView(
                w.id,
                w.host,
                w.pid,
                tuple(w.queues),
                w.concurrency,
                w.in_use,
                w.started_at,
                w.heartbeat_at,
                w.heartbeat_age,
                is_stale(w, self.stale_after),
                w.stopping,
                w.drain_requested_by,
                w.drain_requested_at,
                w.heartbeat_interval,
                stale_window(w, self.stale_after),
            )
            for w in recs
        )
        return WorkersView(now, views, self.stale_after)

    # --- why -------------------------------------------------------------------------------------

    async def _limits(self, row: JobRow, now: datetime) -> list[LimitState]:
        key = (row.wait or {}).get("key")
        if not key:
            return []
        return list(await self.driver.limit_state(keys=[str(key)], now=now))

    async def _why(self, row: JobRow, awaited: list[JobRow] | None = None, *, fix: str | None = None) -> WhyReport:
        """``fix``: what a dead job's last error said to do (read here when not given)."""
        now = self.clock.now()
        if row.state is JobState.DEAD and fix is None:
            fix = latest_fix(await self.driver.job_attempts(job_id=row.id))
        dup = None
        if row.state in (JobState.DEAD, JobState.COMPLETED, JobState.CANCELLED):
            dup = await self.driver.job_duplicate(job_id=row.id)  # type: ignore[attr-defined]
        causes = job_causes(
            row,
            now=now,
            pause=await self._pause(row.queue),
            workers=await self._workers(now),
            stale_after=self.stale_after,
            duplicate=dup,
            limits=await self._limits(row, now),
            waited=_tally(row, awaited if awaited is not None else await self._awaited(row)),
            awaited_by=await self.driver.job_awaited_by(job_id=row.id) if row.state in LIVE_STATES else (),
            fix=fix,
        )
        return WhyReport("job", row.id, row.state, tuple(causes), now)

    async def _awaited(self, row: JobRow) -> list[JobRow] | None:
        """The rows of the jobs a suspended fan-in waits for, in the order it named them (None:
        it is no fan-in waiting)."""
        ids = _awaited_ids(row)
        return None if ids is None else await self._rows_in_order(ids)

    async def _awaited_last(self, job_id: str) -> list[JobRow]:
        """The rows of the jobs a fan-in's last wait named, else those its last enqueue step
        enqueued (its stored steps), as they stand now."""
        steps = await self.driver.step_load(job_id=job_id)
        named = [s for s in steps if s.job_ids is not None]
        last = next((s for s in reversed(named) if s.kind == "jobs"), named[-1] if named else None)
        return await self._rows_in_order(last.job_ids or []) if last is not None else []

    async def _parents(self, job_id: str) -> tuple[tuple[JobSummary, str], ...]:
        """The jobs whose enqueue step enqueued ``job_id``, each with that step (one probe, 0019)."""
        by = await self.driver.step_enqueued_by(job_id=job_id)
        rows = {r.id: r for r in await self._rows_in_order([b.job_id for b in by])} if by else {}
        return tuple((JobSummary.of(rows[b.job_id]), b.step) for b in by if b.job_id in rows)

    async def _rows_in_order(self, ids: list[str]) -> list[JobRow]:
        found = {r.id: r for r in await self.driver.job_get_many(job_ids=ids)}
        return [found[i] for i in ids if i in found]

    async def why_job(self, job_id: str, *, tenant: str | None = None) -> WhyReport:
        row = await load_job(self, job_id, self._tenant(tenant), budget_ms=self.budget_ms)
        return await self._why(row)

    async def why_queue(self, queue: str) -> WhyReport:
        """Why a queue's jobs wait; X_UNKNOWN_QUEUE (with the names it may have meant) for a queue
        no job, worker or pause names."""
        view = await self.queues()
        q = next((q for q in view.queues if q.name == queue), None)
        if q is None:
            known = await self.driver.queue_names_known()
            if queue not in known:
                raise unknown_queue(queue, known)
            q = _empty_queue(queue)
        workers = await self._workers(view.at)
        waits = await self.driver.queue_waits(queue=queue, now=view.at, budget_ms=self.budget_ms)
        keys = sorted({g.key for g in waits if g.key and g.kind in ("rate", "concurrency")})
        limits = list(await self.driver.limit_state(keys=keys, now=view.at)) if keys else []
        causes = queue_causes(q, workers=workers, stale_after=self.stale_after, now=view.at, waits=waits, limits=limits)
        return WhyReport("queue", queue, None, tuple(causes), view.at)

    async def why(self, target: str) -> WhyReport:
        """``jobsctl why TARGET``: a queue's causes when a queue has that name, else a job's when it
        looks like an id (a mistyped one is X_NOT_FOUND naming the ids it may have meant), else
        X_UNKNOWN_QUEUE naming the queues it may have meant."""
        name = target.strip() if isinstance(target, str) else target
        await self._open()
        known = await self.driver.queue_names_known()
        if name in known:
            return await self.why_queue(name)
        try:
            id_fragment(name)
        except JobsError:
            raise unknown_queue(name, known) from None
        try:
            return await self.why_job(name)
        except JobsError as err:
            if err.code != X_NOT_FOUND:
                raise
            raise await self._near_misses(name, err) from None

    async def _near_misses(self, value: str, err: JobsError) -> JobsError:
        """X_NOT_FOUND for an id no job has, naming the jobs whose id's head or tail is one or two
        keystrokes from it: among the ids that share its first or last six digits and the newest
        page of jobs (where an id just copied from a screen most likely comes from)."""
        frag = id_fragment(value).replace("-", "")
        found: dict[str, JobSummary] = {}
        for part in {frag[:MIN_FRAGMENT], frag[-MIN_FRAGMENT:]}:
            for j in await self.driver.job_find(
                fragment=part, tenant=self.tenant, limit=MAX_CANDIDATES, budget_ms=self.budget_ms
            ):
                found[j.id] = j
        newest = await self.driver.job_page(  # type: ignore[attr-defined]
            where=scoped(JobFilter(), self.tenant), limit=MAX_PAGE, cursor=None, count_cap=1, budget_ms=self.budget_ms
        )
        found.update((j.id, j) for j in newest.items)

        def closeness(j: JobSummary) -> float:
            digits = j.id.replace("-", "")
            ends = (digits[: len(frag)], digits[-len(frag) :])
            return max(difflib.SequenceMatcher(None, frag, end).ratio() for end in ends)

        ranked = sorted((j for j in found.values() if closeness(j) >= NEAR), key=closeness, reverse=True)[:3]
        if not ranked:
            return err
        shown = " or ".join(f"{j.id} ({j.name}, {j.state.value})" for j in ranked)
        return JobsError(
            X_NOT_FOUND,
            cause=f"{err.cause}; did you mean {shown}?",
            fix=f"jobsctl why {ranked[0].id}",
            meta={"candidates": [j.id for j in ranked]},
        )


def unknown_queue(
    name: str, known: Sequence[str], *, command: str = "jobsctl why", also: str = ", and it is not a job id"
) -> JobsError:
    """X_UNKNOWN_QUEUE for ``name``, with the names it may have meant and ``command`` run on the
    closest (``also``: what else the name was looked up as)."""
    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return JobsError(
        X_UNKNOWN_QUEUE,
        cause=f"no job, worker or pause names queue {name!r}{also}{hint}",
        fix=f"{command} {close[0]}" if close else "jobsctl queues",
        meta={"candidates": close},
    )


def _empty_queue(name: str) -> QueueStats:
    from engine.projections import Count

    zero = Count(0)
    return QueueStats(name, zero, zero, zero, zero, zero, zero, zero, None, None, (0,) * 60, 0, 0, 0)


def _awaited_ids(row: JobRow) -> list[str] | None:
    wait = row.wait or {}
    if row.state is not JobState.SUSPENDED or wait.get("kind") != "jobs" or not isinstance(wait.get("jobs"), list):
        return None
    return [str(i) for i in wait["jobs"]]


def _tally(row: JobRow, awaited: list[JobRow] | None) -> dict[str, int] | None:
    """How many of the jobs a fan-in waits for are in each state now ("gone": no job any more)."""
    ids = _awaited_ids(row)
    if ids is None or awaited is None:
        return None
    found = {r.id: r.state.value for r in awaited}
    return dict(Counter(found.get(i, "gone") for i in ids))


def _replayed(steps: Sequence[StepRecord], awaited: Sequence[JobRow]) -> str | None:
    """What a plain retry of a dead job replays of its stored waits for jobs, when that answer is
    one a retry means to look past: a wait that timed out (it times out again at once), or the
    dead jobs a wait answered (answered dead again). Retried with its children, the wait looks
    afresh (engine/actions/children.py restart_step). None when no wait is replayed so."""
    waits = [s for s in steps if s.kind == "jobs"]
    if any(waited_out(s) for s in waits):
        return "retried alone, its wait answers its timeout again at once"
    n = sum(r.state is JobState.DEAD for r in awaited) if waits else 0
    return f"retried alone, its wait answers its {n} dead job{'s' if n != 1 else ''} again" if n else None
