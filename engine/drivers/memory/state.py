"""The memory driver's tables: typed Python collections behind one lock, and the base every area
of the driver stands on.

Each collection mirrors a table of sql/migrations, so a behaviour and the SQL that must mean the
same thing can be read side by side. A new area adds its table here as a typed field.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from engine.drivers.dedupe import DedupeKey, dedupe_key
from engine.outbox_types import OutboxRow, RelayRecord
from engine.records import AttemptRecord, AuditEntry, BackfillRun, EventRecord, HistoryEntry, WorkerRecord
from engine.series import percentile_disc
from engine.types import LIVE_STATES, Claim, GaugeCount, JobRow, JobState, StoredStep

LIVE = frozenset(LIVE_STATES)
# The states a claim takes a due row from (the job_claim index's states).
CLAIMABLE = frozenset({JobState.READY, JobState.DELAYED, JobState.PARKED, JobState.SUSPENDED})
ROLLUP_KEPT = timedelta(hours=2)  # as throughput_rollup in SQL: rolled minutes older than this go


def ready_again(row: JobRow, now: datetime) -> JobRow:
    """A settled row made ready by an operator's retry (of a dead job, from a step, a backfill
    pass's resume): attempts reset, due now, its result, lease, wait and stop cleared, as the SQL's
    ``revive_settled`` fragment writes it."""
    return replace(
        row,
        state=JobState.READY,
        attempt=0,
        run_at=now,
        updated_at=now,
        finished_at=None,
        result=None,
        stop_reason=None,
        wait=None,
        waiting_since=None,
        lease_until=None,
    )


def minute_of(t: datetime) -> datetime:
    """The calendar minute ``t`` falls in (date_trunc('minute', t))."""
    return t.replace(second=0, microsecond=0)


@dataclass(frozen=True)
class Pause:
    """A paused queue's row of jobs.queue: who paused it, when, why."""

    by: str | None
    at: datetime
    note: str | None


@dataclass
class Slot:
    """One row of jobs.slot: a concurrency slot of a key, free when ``job_id`` is None."""

    job_id: str | None = None
    worker: str | None = None
    lease_until: datetime | None = None


@dataclass(frozen=True)
class Bucket:
    """One row of jobs.rate_bucket."""

    tokens: float
    refilled_at: datetime


@dataclass(frozen=True)
class Leader:
    """One row of jobs.leader: the holder of a lease, its term, and until when it holds."""

    holder: str
    term: int
    until: datetime


@dataclass(frozen=True)
class GaugeSnapshot:
    """The fleet's last count of the queue gauges (jobs.meta's gauges row) and when it was taken."""

    taken_at: datetime
    counts: list[GaugeCount]


@dataclass(frozen=True)
class RolledMinute:
    """One row of jobs.throughput_minute: a queue's minute, as the rollup counted it."""

    completed: int = 0
    dead: int = 0
    wait_p50: float | None = None  # seconds (the table keeps milliseconds)
    wait_p95: float | None = None
    run_p50: float | None = None


def rolled_minute(rows: list[JobRow]) -> RolledMinute:
    """The figures of one (minute, queue)'s finished rows, as throughput_rollup and queue_series
    compute them in SQL (percentile_disc over whole milliseconds)."""
    done = [r for r in rows if r.state is JobState.COMPLETED]
    waits = [_ms(r.claimed_at - r.run_at) for r in done if r.claimed_at is not None]
    runs = [_ms(r.finished_at - r.claimed_at) for r in done if r.claimed_at is not None and r.finished_at is not None]
    p50, p95, run = percentile_disc(waits, 0.5), percentile_disc(waits, 0.95), percentile_disc(runs, 0.5)
    return RolledMinute(
        len(done),
        sum(1 for r in rows if r.state is JobState.DEAD),
        None if p50 is None else p50 / 1000,
        None if p95 is None else p95 / 1000,
        None if run is None else run / 1000,
    )


def _ms(d: timedelta) -> int:
    """``d`` in whole milliseconds as ``(extract(epoch from d) * 1000)::int`` gives them: exact, and a
    half rounded away from zero (numeric to integer), where Python's round() would round it to even."""
    us = d // timedelta(microseconds=1)
    ms = (abs(us) + 500) // 1000
    return ms if us >= 0 else -ms


@dataclass
class Rollup:
    """jobs.throughput_minute and its watermark (jobs.meta throughput_rolled_until)."""

    rolled: datetime | None = None  # every minute before it is rolled up; None: none is
    minutes: dict[tuple[datetime, str], RolledMinute] = field(default_factory=dict)  # (minute, queue)


class Wakeups:
    """LISTEN/NOTIFY for one process: waiters on any loop, woken thread-safely."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.waiters: list[tuple[frozenset[str], asyncio.AbstractEventLoop, asyncio.Future[bool]]] = []

    def notify(self, queues: set[str]) -> None:
        with self.lock:
            hit = [w for w in self.waiters if w[0] & queues]
            self.waiters = [w for w in self.waiters if not (w[0] & queues)]
        for _, loop, fut in hit:
            loop.call_soon_threadsafe(_resolve, fut)


def _resolve(fut: asyncio.Future[bool]) -> None:
    if not fut.done():
        fut.set_result(True)


@dataclass
class MemoryState:
    lock: threading.RLock = field(default_factory=threading.RLock)
    jobs: dict[str, JobRow] = field(default_factory=dict)
    # The partial unique index over the live states: dedupe key -> job id.
    live_keys: dict[DedupeKey, str] = field(default_factory=dict)
    attempts: dict[str, list[AttemptRecord]] = field(default_factory=dict)
    history: dict[str, list[HistoryEntry]] = field(default_factory=dict)
    paused: dict[str, Pause] = field(default_factory=dict)  # the paused rows of jobs.queue
    queues: set[str] = field(default_factory=set)  # every queue named by a pause or a resume (jobs.queue)
    workers: dict[str, WorkerRecord] = field(default_factory=dict)  # jobs.worker
    # jobs.worker's presence, by worker id: True while held, False once released (the memory
    # driver's workers cannot die apart from it, so only a release ends a presence)
    presence: dict[str, bool] = field(default_factory=dict)
    wakeups: Wakeups = field(default_factory=Wakeups)  # the jobs_enqueue channel
    gauges: GaugeSnapshot | None = None
    slots: dict[tuple[str, int], Slot] = field(default_factory=dict)  # (key, slot) -> jobs.slot row
    buckets: dict[str, Bucket] = field(default_factory=dict)  # key -> jobs.rate_bucket row
    leaders: dict[str, Leader] = field(default_factory=dict)  # name -> jobs.leader row
    rollup: Rollup = field(default_factory=Rollup)
    steps: dict[str, dict[str, StoredStep]] = field(default_factory=dict)  # job id -> name -> jobs.step row
    events: list[EventRecord] = field(default_factory=list)  # jobs.event
    outbox: dict[str, OutboxRow] = field(default_factory=dict)  # jobs.outbox by id
    outbox_relays: dict[str, RelayRecord] = field(default_factory=dict)  # jobs.outbox_relay by id
    outbox_wakeups: Wakeups = field(default_factory=Wakeups)  # the outbox channel's NOTIFY
    schedules: dict[str, dict[str, Any]] = field(default_factory=dict)  # jobs.schedule_state by task
    schedule_ticks: dict[str, dict[str, Any]] = field(default_factory=dict)  # jobs.schedule_leader by name
    drain_notes: dict[str, str | None] = field(default_factory=dict)  # jobs.worker's drain note by worker id
    backfills: dict[str, BackfillRun] = field(default_factory=dict)  # jobs.backfill by run id
    audit: list[AuditEntry] = field(default_factory=list)  # jobs.audit_log, oldest first
    audit_written: int = 0  # the identity's last value: ids go on after a prune

    def leads(self, leader: str, holder: str, term: int, now: datetime) -> bool:
        """Whether ``holder`` still holds ``leader``'s lease at ``term`` (every leader write's fence)."""
        cur = self.leaders.get(leader)
        return cur is not None and cur.holder == holder and cur.term == term and cur.until >= now

    def put(self, row: JobRow) -> None:
        """Store a row and keep the live-key index in step with its state."""
        old = self.jobs.get(row.id)
        k = dedupe_key(row.name, row.tenant, row.idempotency_key)
        if old is not None and old.state in LIVE and row.state not in LIVE:
            if self.live_keys.get(k) == row.id:
                del self.live_keys[k]
        if row.state in LIVE:
            self.live_keys[k] = row.id
        self.jobs[row.id] = row

    def live_holder(self, row: JobRow) -> str | None:
        """The id of the live row holding ``row``'s dedupe key (I2), if any: maybe ``row`` itself."""
        return self.live_keys.get(dedupe_key(row.name, row.tenant, row.idempotency_key))

    def held(self, claim: Claim) -> JobRow | None:
        """The row, when ``claim``'s claimant still holds it (running, same claimant and run: I15)."""
        row = self.jobs.get(claim.job_id)
        if row is None or row.state is not JobState.RUNNING:
            return None
        if row.claimed_by != claim.worker or row.run != claim.run:
            return None
        return row

    def add_history(self, entry: HistoryEntry) -> None:
        self.history.setdefault(entry.job_id, []).append(entry)

    def add_audit(self, entry: AuditEntry) -> None:
        """Append ``entry`` under the next id (jobs.audit_log's identity), with the change it records."""
        self.audit_written += 1
        self.audit.append(replace(entry, id=self.audit_written))

    def record_attempt(self, rec: AttemptRecord) -> None:
        """Record a settled claim; one that resumed a suspended run continues its attempt (as
        job_nack in SQL): the job's latest row, a suspension of the same attempt, is carried
        forward with its start kept, so one run is one attempt row however often it polled."""
        recs = self.attempts.setdefault(rec.job_id, [])
        if any(a.run == rec.run for a in recs):  # written already (on conflict do nothing)
            return
        last = recs[-1] if recs else None
        if last is not None and last.outcome == "suspended" and last.attempt == rec.attempt:
            recs[-1] = replace(rec, started_at=last.started_at)
        else:
            recs.append(rec)

    def steps_of(self, job_id: str) -> dict[str, StoredStep]:
        return self.steps.setdefault(job_id, {})


class MemoryBase:
    """What every area of the memory driver stands on: the tables, and the wake-up the SQL sends."""

    state: MemoryState

    def __init__(self) -> None:
        self.state = MemoryState()

    def _wake(self, queues: Iterable[str]) -> None:
        """pg_notify('jobs_enqueue', queue) for each of ``queues``: wake their idle workers."""
        wanted = set(queues)
        if wanted:
            self.state.wakeups.notify(wanted)
