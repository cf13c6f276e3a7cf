"""The memory driver's tables: plain Python collections behind one lock.

Each collection mirrors a table of sql/schema.sql, so a behaviour and the SQL that must mean the
same thing can be read side by side.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from engine.types import LIVE_STATES, AttemptRecord, BackfillRun, HistoryEntry, JobRow

LIVE = frozenset(LIVE_STATES)


def dedupe_key(name: str, tenant: str | None, key: str) -> tuple[str, str, str]:
    """The index expression `(name, coalesce(tenant, ''), idempotency_key)` (I2)."""
    return (name, tenant or "", key)


@dataclass
class MemoryState:
    lock: threading.RLock = field(default_factory=threading.RLock)
    jobs: dict[str, JobRow] = field(default_factory=dict)
    # The partial unique index over the live states: dedupe key -> job id.
    live_keys: dict[tuple[str, str, str], str] = field(default_factory=dict)
    attempts: dict[str, list[AttemptRecord]] = field(default_factory=dict)
    history: dict[str, list[HistoryEntry]] = field(default_factory=dict)
    paused: dict[str, dict[str, Any]] = field(default_factory=dict)  # queue -> {by, at, note}
    extra: dict[str, Any] = field(default_factory=dict)  # tables of later subsystems
    backfills: dict[str, BackfillRun] = field(default_factory=dict)  # jobs.backfill by run id

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

    def add_history(self, entry: HistoryEntry) -> None:
        self.history.setdefault(entry.job_id, []).append(entry)


ROLLUP_KEPT = timedelta(hours=2)  # as throughput_rollup in SQL: rolled minutes older than this go


def minute_of(t: datetime) -> datetime:
    """The calendar minute ``t`` falls in (date_trunc('minute', t))."""
    return t.replace(second=0, microsecond=0)


@dataclass
class Rollup:
    """jobs.throughput_minute and its watermark (jobs.meta throughput_rolled_until)."""

    rolled: datetime | None = None  # every minute before it is rolled up; None: none is
    minutes: dict[tuple[datetime, str], int] = field(default_factory=dict)  # (minute, queue) -> completions


def rollup_of(state: MemoryState) -> Rollup:
    return state.extra.setdefault("throughput", Rollup())  # type: ignore[no-any-return]
