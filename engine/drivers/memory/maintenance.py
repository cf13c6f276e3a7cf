"""MemoryDriver's maintenance: the leader lease, the rescuer, the pruner, the throughput rollup and
the worker reaper, with the same meaning as sql/queries/maintenance.sql, on the injected clock.
Buckets, index and table upkeep have nothing to do here: the memory driver keeps its settled rows
in no bucket, and keeps no indexes and no dead row versions, so its listings name none and a
bucket, index or table given to act on is one they do not list: X_INVALID_ARGUMENT, as PostgreSQL
answers a name its listings do not give (the leader's fence checked first, as there)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from engine.drivers.base_maintenance import not_listed, schema_name
from engine.drivers.memory.state import ROLLUP_KEPT, Leader, MemoryBase, minute_of, rolled_minute
from engine.records import AttemptRecord, HistoryEntry, IndexRebuilt, IndexSize, SettledBucket, TableRows
from engine.types import JobRow, JobState, Orphan

_PRUNED = (JobState.COMPLETED, JobState.CANCELLED)
_ROLLED = (JobState.COMPLETED, JobState.DEAD)  # the rows throughput_rollup counts
KEEPS_NONE = "the memory driver keeps none, so it has none to act on"


class MemoryMaintenance(MemoryBase):
    async def leader_acquire(self, *, name: str, holder: str, now: datetime, lease_seconds: float) -> int | None:
        with self.state.lock:
            until = now + timedelta(seconds=lease_seconds)
            cur = self.state.leaders.get(name)
            if cur is None:
                self.state.leaders[name] = Leader(holder, 1, until)
                return 1
            if cur.holder != holder and cur.until >= now:
                return None
            term = cur.term if cur.holder == holder else cur.term + 1
            self.state.leaders[name] = Leader(holder, term, until)
            return term

    async def leader_release(self, *, name: str, holder: str, term: int, now: datetime) -> None:
        with self.state.lock:
            cur = self.state.leaders.get(name)
            if cur is not None and cur.holder == holder and cur.term == term:
                self.state.leaders[name] = replace(cur, until=now - timedelta(milliseconds=1))

    async def job_rescue(
        self, *, leader: str, holder: str, term: int, now: datetime, limit: int
    ) -> list[tuple[str, JobState]]:
        out: list[tuple[str, JobState]] = []
        with self.state.lock:
            if not self.state.leads(leader, holder, term, now):
                return out
            lapsed = sorted(
                (
                    r
                    for r in self.state.jobs.values()
                    if r.state is JobState.RUNNING and r.lease_until is not None and r.lease_until < now
                ),
                key=lambda r: (r.lease_until, r.id),  # job_rescue's order: the longest lapsed first, ties by id
            )[:limit]
            for r in lapsed:
                err = f"X_LEASE_LOST: worker {r.claimed_by or '?'} stopped renewing the lease of run {r.run}"
                out.append((r.id, self._lose(r, now, err, {})))
        # The statement's pg_notify: a job made ready again wakes its queue.
        self._wake(row.queue for row, (_, state) in zip(lapsed, out) if state is JobState.READY)
        return out

    async def worker_gone(self) -> list[str]:
        with self.state.lock:
            return sorted(w for w, held in self.state.presence.items() if not held and w in self.state.workers)

    async def job_rescue_orphaned(self, *, workers: Sequence[str], now: datetime, limit: int) -> list[Orphan]:
        with self.state.lock:
            gone = {
                w for w, held in self.state.presence.items() if not held and w in self.state.workers and w in workers
            }
            orphaned = sorted(
                (r for r in self.state.jobs.values() if r.state is JobState.RUNNING and r.claimed_by in gone),
                key=lambda r: r.id,
            )[:limit]
            out = []
            for r in orphaned:
                err = f"X_LEASE_LOST: worker {r.claimed_by} is gone (its database session ended) during run {r.run}"
                state = self._lose(r, now, err, {"why": "worker-gone"})
                out.append(Orphan(r.id, state, r.queue, str(r.claimed_by)))
            if len(orphaned) < limit:  # every job of theirs taken: the gone workers' rows go
                for wid in gone:
                    self.state.workers.pop(wid, None)
                    self.state.presence.pop(wid, None)
        self._wake(o.queue for o in out if o.state is JobState.READY)  # the statement's pg_notify
        return out

    def _lose(self, r: JobRow, now: datetime, err: str, why: dict[str, str]) -> JobState:
        """A running row whose run is lost: ready again (dead on its last attempt), the attempt
        recorded as 'lost', the history's 'lease_lost' (the rescuers of maintenance.sql)."""
        dead = r.attempt >= r.max_attempts
        if dead:
            err += f" [stop: attempts-exhausted at attempt {r.attempt} of {r.max_attempts}]"
        state = JobState.DEAD if dead else JobState.READY
        self.state.put(
            replace(
                r,
                state=state,
                run_at=r.run_at if dead else now,
                stop_reason="attempts-exhausted" if dead else None,
                finished_at=now if dead else None,
                last_error=err,
                error_code="X_LEASE_LOST",
                lease_until=None,
                waiting_since=None,
                updated_at=now,
            )
        )
        self.state.record_attempt(
            AttemptRecord(
                r.id, r.run, r.attempt, r.claimed_by or "?", r.claimed_at or now, now, "lost", "X_LEASE_LOST", err
            )
        )
        data = {"worker": r.claimed_by, "run": r.run, "attempt": r.attempt, "to": state.value} | why
        self.state.add_history(HistoryEntry(r.id, now, "lease_lost", "rescuer", None, data))
        return state

    async def job_prune(
        self, *, leader: str, holder: str, term: int, now: datetime, before: datetime, dead_before: datetime, limit: int
    ) -> list[str]:
        with self.state.lock:
            if not self.state.leads(leader, holder, term, now):
                return []
            doomed = sorted(
                (
                    r
                    for r in self.state.jobs.values()
                    if r.finished_at is not None
                    and (
                        (r.state in _PRUNED and r.finished_at < before)
                        or (r.state is JobState.DEAD and r.finished_at < dead_before)
                    )
                ),
                key=lambda r: (r.finished_at, r.id),  # job_prune's order: the oldest first, ties by id
            )[:limit]
            for r in doomed:
                # As job_prune in SQL: attempts, history and steps go with the row, in one step.
                del self.state.jobs[r.id]
                self.state.attempts.pop(r.id, None)
                self.state.history.pop(r.id, None)
                self.state.steps.pop(r.id, None)
            return [r.id for r in doomed]

    async def throughput_rollup(self, *, leader: str, holder: str, term: int, now: datetime, settle: float) -> int:
        with self.state.lock:
            if not self.state.leads(leader, holder, term, now):
                return 0
            roll = self.state.rollup
            kept_from = minute_of(now) - ROLLUP_KEPT
            # Every leader pass drops the minutes older than two hours, whether or not it counts one
            # (the statement's `dropped` is fenced on the leader alone, not on the span).
            for key in [k for k in roll.minutes if k[0] < kept_from]:
                del roll.minutes[key]
            lo = kept_from if roll.rolled is None else max(kept_from, roll.rolled)
            hi = minute_of(now - timedelta(seconds=settle))
            if hi <= lo:  # nothing ended since the watermark (or a clock behind it): it stays
                return 0
            counted: dict[tuple[datetime, str], list[JobRow]] = {}
            for r in self.state.jobs.values():
                if r.state in _ROLLED and r.finished_at is not None and lo <= r.finished_at < hi:
                    counted.setdefault((minute_of(r.finished_at), r.queue), []).append(r)
            for key, rows in counted.items():
                roll.minutes[key] = rolled_minute(rows)
            roll.rolled = hi
            return len(counted)

    async def worker_reap(self, *, before: datetime) -> list[str]:
        with self.state.lock:
            workers = self.state.workers
            gone = [w.id for w in workers.values() if w.heartbeat_at < before]
            for wid in gone:
                del workers[wid]
                self.state.presence.pop(wid, None)
            return gone

    async def index_sizes(self, *, leader: str, holder: str, term: int, now: datetime) -> list[IndexSize]:
        """No indexes, so none grows: nothing to check."""
        return []

    async def index_rebuild(
        self, *, leader: str, holder: str, term: int, now: datetime, index: str, before: int
    ) -> IndexRebuilt | None:
        """No indexes (index_sizes names none): None for a caller not at the leader's term, as on
        PostgreSQL; for the leader, any index is one the listing does not give."""
        schema_name("index", index)
        with self.state.lock:
            if not self.state.leads(leader, holder, term, now):
                return None
        raise not_listed("index", index, KEEPS_NONE)

    async def settled_buckets(self, *, leader: str, holder: str, term: int, now: datetime) -> list[SettledBucket]:
        """Settled rows in no bucket (the pruner deletes them one by one): none to seal or drop."""
        return []

    async def settled_seal(self, *, leader: str, holder: str, term: int, now: datetime) -> int | None:
        """No buckets (settled_buckets names none)."""
        return None

    async def settled_drop(
        self,
        *,
        leader: str,
        holder: str,
        term: int,
        now: datetime,
        bucket: int,
        before: datetime,
        dead_before: datetime,
    ) -> int | None:
        """No buckets (settled_buckets names none): None for a caller not at the leader's term, as on
        PostgreSQL; for the leader, any bucket is one the listing does not give."""
        with self.state.lock:
            if not self.state.leads(leader, holder, term, now):
                return None
        raise not_listed("bucket", bucket, KEEPS_NONE)

    async def table_rows(self, *, leader: str, holder: str, term: int, now: datetime) -> list[TableRows]:
        """No dead row versions (a deleted row is gone at once): no table to vacuum."""
        return []

    async def table_vacuum(self, *, table: str) -> float:
        """Nothing to vacuum (table_rows names no table): any table is one the listing does not give."""
        schema_name("table", table)
        raise not_listed("table", table, KEEPS_NONE)
