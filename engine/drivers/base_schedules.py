"""The schedules area's protocol (engine/drivers/base.py composes it into Driver)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # the scheduler's rows; only named in annotations here
    from engine.schedule import Advanced, SchedulePause, SchedulerLeader, ScheduleRow, TaskDecl, Triggered


class SchedulesArea(Protocol):
    """The cron scheduler's tables (engine/drivers/*/schedules.py, sql/queries/schedules.sql), I21.
    The leader's lease is ``leader_acquire(name="scheduler")``; every write of a tick is fenced on
    its term and on the task's watermark."""

    async def schedule_declare(self, *, tasks: Sequence[TaskDecl], now: datetime) -> None:
        """Upsert declarations; a new task owes the occurrences after ``now``, a known one keeps
        its watermark, skipped count and pause."""
        ...

    async def schedule_seen(self, *, tasks: Sequence[str], now: datetime) -> None:
        """A scheduler process still knows these tasks (by name): their ``seen_at`` is ``now``."""
        ...

    async def schedule_list(self) -> list[ScheduleRow]:
        """Every declared task by name (code points), with its last occurrence's job state."""
        ...

    async def schedule_advance(
        self,
        *,
        task: str,
        expected: datetime | None,
        at: datetime,
        skipped: int,
        job_id: str | None,
        key: str,
        scheduled_for: str,
        leader: str,
        holder: str,
        term: int,
        now: datetime,
    ) -> Advanced:
        """In one transaction: the watermark from ``expected`` to ``at``, ``skipped`` added, and
        with a ``job_id`` the occurrence at ``at`` enqueued under ``key``. Nothing when the caller
        does not lead in ``term``, the watermark is not ``expected`` or the task is paused."""
        ...

    async def schedule_pause(
        self, *, task: str, paused: bool, actor: str | None, note: str | None, now: datetime
    ) -> SchedulePause | None:
        """Pause or resume (a resume owes nothing that fell due while paused); None: no such task."""
        ...

    async def schedule_trigger(
        self,
        *,
        task: str,
        job_id: str,
        key: str,
        scheduled_for: str,
        actor: str | None,
        note: str | None,
        now: datetime,
    ) -> Triggered | None:
        """Enqueue an occurrence now under the trigger's own key, audited on the job's history."""
        ...

    async def schedule_leader_tick(
        self, *, leader: str, holder: str, term: int, host: str, pid: int, now: datetime
    ) -> bool:
        """The leader stamps its process and this tick, fenced on its term."""
        ...

    async def schedule_leader_get(self, *, leader: str) -> SchedulerLeader | None: ...
