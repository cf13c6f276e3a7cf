"""The scheduler's projection and its operator actions, for the CLI and the console alike.

``Schedules(engine).view()`` answers every declared task (cron and its words, zone, next
occurrence, last enqueued occurrence and its job's state, skipped by catch-up, pause) and the
leader (process, host, term, lease end, last tick). ``Schedules(engine, actor=...)`` pauses,
resumes and triggers, audited; ``read_only=True`` refuses them with X_READ_ONLY.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from engine.errors import X_INVALID_ARGUMENT, X_READ_ONLY, X_UNKNOWN_TASK, JobsError
from engine.ids import IdFactory
from engine.introspect.base import EngineView
from engine.runtime import logs
from engine.schedule import Cron, SchedulePause, SchedulerLeader, ScheduleRow, instant_text, trigger_key
from engine.services.scheduler import LEADER
from engine.text import check_note


@dataclass(frozen=True)
class TaskView:
    name: str
    cron: str
    words: str
    timezone: str
    catch_up: str
    max_catch_up: int | None  # the bound, for catch_up="all"
    queue: str
    next_at: datetime | None  # the next occurrence after now (None while paused or retired)
    last_at: datetime | None  # the last occurrence enqueued
    last_job_id: str | None
    last_job_state: str | None  # "pruned" once its row is gone
    watermark: datetime | None
    skipped: int  # missed occurrences catch-up settled without a job, ever
    paused: bool
    paused_by: str | None
    paused_at: datetime | None
    pause_note: str | None
    retired: bool  # no scheduler process has declared it for ten minutes: none of it is enqueued
    seen_at: datetime  # when a scheduler process last declared it

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in self.__dict__.items():
            out[k] = v.isoformat() if isinstance(v, datetime) else v
        return out


@dataclass(frozen=True)
class LeaderView:
    holder: str
    host: str | None
    pid: int | None
    term: int
    lease_until: datetime
    ticked_at: datetime | None
    live: bool  # its lease has not lapsed
    tick_age: float | None  # seconds since its last tick

    def as_dict(self) -> dict[str, Any]:
        return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class SchedulesView:
    tasks: tuple[TaskView, ...]
    leader: LeaderView | None  # None: no process has ever led
    at: datetime

    def as_dict(self) -> dict[str, Any]:
        return {
            "at": self.at.isoformat(),
            "leader": None if self.leader is None else self.leader.as_dict(),
            "tasks": [t.as_dict() for t in self.tasks],
        }


def task_view(row: ScheduleRow, now: datetime) -> TaskView:
    cron = Cron(row.cron, row.timezone)
    retired = row.retired(now)
    try:
        words = cron.words
        nxt = None if row.paused or retired else cron.next_after(max(now, row.since))
    except Exception:  # a declaration this host cannot read (a zone its database lacks)
        words, nxt = "?", None
    state = row.last_job_state or ("pruned" if row.last_job_id else None)
    return TaskView(
        row.task,
        row.cron,
        words,
        row.timezone,
        row.catch_up,
        row.max_catch_up if row.catch_up == "all" else None,
        row.queue,
        nxt,
        row.last_at,
        row.last_job_id,
        state,
        row.watermark,
        row.skipped,
        row.paused,
        row.paused_by,
        row.paused_at,
        row.note,
        retired,
        row.seen_at,
    )


def leader_view(lead: SchedulerLeader | None, now: datetime) -> LeaderView | None:
    if lead is None:
        return None
    age = None if lead.ticked_at is None else max(0.0, (now - lead.ticked_at).total_seconds())
    return LeaderView(
        lead.holder, lead.host, lead.pid, lead.term, lead.lease_until, lead.ticked_at, lead.lease_until >= now, age
    )


class Schedules(EngineView):
    """``Schedules(engine)`` reads; with ``actor=`` it also pauses, resumes and triggers."""

    def __init__(
        self,
        engine: Any,
        *,
        actor: str | None = None,
        read_only: bool = False,
        clock: Any = None,
        note_fix: str = "note='INC-7: nightly report rerun'",
    ) -> None:
        super().__init__(engine, clock=clock)
        self._note_fix = note_fix  # how the caller gives a note: a keyword here, --note on the CLI
        self.actor = actor.strip() if isinstance(actor, str) and actor.strip() else None
        self.read_only = read_only
        self._ids = IdFactory(self.clock)

    async def view(self) -> SchedulesView:
        await self._open()
        now = self.clock.now()
        rows = await self.driver.schedule_list()
        lead = await self.driver.schedule_leader_get(leader=LEADER)
        return SchedulesView(tuple(task_view(r, now) for r in rows), leader_view(lead, now), now)

    def _writable(self, what: str, note: str | None) -> str:
        """Refuse an action in read-only mode, with no actor, or with a note that is not a str (or
        None) or that PostgreSQL cannot store: each before anything is written."""
        check_note(note, what=what, fix=self._note_fix)
        if self.read_only:
            raise JobsError(
                X_READ_ONLY,
                cause=f"{what} was refused: this operator is read-only",
                fix="Schedules(engine, actor=..., read_only=False)",
            )
        if self.actor is None:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"{what} names no actor: every action says who took it",
                fix="Schedules(engine, actor='alice')",
            )
        return self.actor

    async def _unknown(self, name: str) -> JobsError:
        known = [r.task for r in await self.driver.schedule_list()]
        near = difflib.get_close_matches(name, known, n=1)
        return JobsError(
            X_UNKNOWN_TASK,
            cause=f"no task named {name!r} is declared"
            + (f" (did you mean {near[0]!r}?)" if near else f"; declared: {', '.join(known) or 'none'}"),
            fix="jobsctl schedule --json",
        )

    async def pause(self, name: str, *, note: str | None = None) -> SchedulePause:
        """Pause a task: its occurrences are not enqueued until it is resumed (``changed`` False:
        it was paused already, and the answer names who paused it)."""
        return await self._set_paused(name, True, note)

    async def resume(self, name: str, *, note: str | None = None) -> SchedulePause:
        """Resume a task; what fell due while it was paused is not owed (not counted as skipped)."""
        return await self._set_paused(name, False, note)

    async def _set_paused(self, name: str, paused: bool, note: str | None) -> SchedulePause:
        actor = self._writable("pause" if paused else "resume", note)
        await self._open()
        now = self.clock.now()
        res = await self.driver.schedule_pause(task=name, paused=paused, actor=actor, note=note, now=now)
        if res is None:
            raise await self._unknown(name)
        if res.changed:
            logs.emit(logs.SCHEDULE_PAUSED if paused else logs.SCHEDULE_RESUMED, task=name, actor=actor, note=note)
        return res

    async def trigger(self, name: str, *, note: str | None = None) -> str:
        """Enqueue an occurrence of ``name`` now, under its own key; answers the job id."""
        actor = self._writable("trigger", note)
        await self._open()
        now = self.clock.now()
        res = await self.driver.schedule_trigger(
            task=name,
            job_id=self._ids.new(),
            key=trigger_key(name, now),
            scheduled_for=instant_text(now),
            actor=actor,
            note=note,
            now=now,
        )
        if res is None:
            raise await self._unknown(name)
        if res.job_id is None:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"task {name!r} was triggered at {now.isoformat()} already and that job is still live",
                fix=f"jobsctl schedule trigger {name}",
            )
        logs.emit(logs.SCHEDULE_TRIGGERED, task=name, actor=actor, job_id=res.job_id, note=note)
        return res.job_id
