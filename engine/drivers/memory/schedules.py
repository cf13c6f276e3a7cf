"""MemoryDriver's scheduler tables (jobs.schedule_state, jobs.schedule_leader), with the meaning
of sql/queries/schedules.sql: the same fences on the leader's term and on the watermark."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from engine.codec import loads
from engine.drivers.memory.inserts import insert_jobs
from engine.drivers.memory.state import MemoryBase
from engine.records import AuditEntry, HistoryEntry
from engine.schedule import Advanced, SchedulePause, SchedulerLeader, ScheduleRow, TaskDecl, Triggered
from engine.types import NewJob


class MemorySchedules(MemoryBase):
    def _tasks(self) -> dict[str, dict[str, Any]]:
        return self.state.schedules

    def _ticks(self) -> dict[str, dict[str, Any]]:
        return self.state.schedule_ticks

    async def schedule_declare(self, *, tasks: Sequence[TaskDecl], now: datetime) -> None:
        with self.state.lock:
            table = self._tasks()
            for t in tasks:
                decl = {
                    "cron": t.cron,
                    "timezone": t.timezone,
                    "catch_up": t.catch_up,
                    "max_catch_up": t.max_catch_up,
                    "queue": t.queue,
                    "max_attempts": t.max_attempts,
                    "priority": t.priority,
                    "input": loads(t.input_text),
                }
                row = table.get(t.name)
                if row is None:
                    table[t.name] = decl | {
                        "declared_at": now,
                        "seen_at": now,
                        "watermark": None,
                        "skipped": 0,
                        "last_at": None,
                        "last_job_id": None,
                        "paused": False,
                        "paused_by": None,
                        "paused_at": None,
                        "note": None,
                    }
                else:
                    row.update(decl)

    async def schedule_seen(self, *, tasks: Sequence[str], now: datetime) -> None:
        with self.state.lock:
            for name in tasks:
                row = self._tasks().get(name)
                if row is not None and row["seen_at"] < now:
                    row["seen_at"] = now

    async def schedule_list(self) -> list[ScheduleRow]:
        with self.state.lock:
            out = []
            for name in sorted(self._tasks()):
                r = self._tasks()[name]
                job = self.state.jobs.get(r["last_job_id"]) if r["last_job_id"] else None
                out.append(
                    ScheduleRow(
                        name,
                        r["cron"],
                        r["timezone"],
                        r["catch_up"],
                        r["max_catch_up"],
                        r["queue"],
                        r["declared_at"],
                        r["watermark"],
                        r["skipped"],
                        r["last_at"],
                        r["last_job_id"],
                        None if job is None else job.state.value,
                        r["paused"],
                        r["paused_by"],
                        r["paused_at"],
                        r["note"],
                        r["seen_at"],
                    )
                )
            return out

    def _input(self, task: str, r: dict[str, Any], scheduled_for: str, trigger: str) -> dict[str, Any]:
        return {"task": task, "scheduled_for": scheduled_for, "trigger": trigger, "input": r["input"]}

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
        with self.state.lock:
            r = self._tasks().get(task)
            if (
                r is None
                or r["paused"]
                or r["watermark"] != expected
                or not self.state.leads(leader, holder, term, now)
            ):
                return Advanced(False)
            r["watermark"], r["skipped"] = at, r["skipped"] + skipped
            if job_id is None:
                return Advanced(True)
            r["last_at"], r["last_job_id"] = at, job_id
            new = NewJob(
                job_id,
                task,
                r["queue"],
                key,
                self._input(task, r, scheduled_for, "cron"),
                r["max_attempts"],
                None,
                None,
                r["priority"],
            )
            (res,), fresh = insert_jobs(self.state, [new], now)
            self._wake(fresh)
            return Advanced(True, None if res.deduped else res.id)

    async def schedule_pause(
        self, *, task: str, paused: bool, actor: str | None, note: str | None, now: datetime
    ) -> SchedulePause | None:
        with self.state.lock:
            r = self._tasks().get(task)
            if r is None:
                return None
            changed = r["paused"] != paused
            if changed:
                r.update(paused=paused, paused_by=actor, paused_at=now, note=note)
                if not paused:
                    r["watermark"] = now if r["watermark"] is None else max(r["watermark"], now)
                action = "schedule.pause" if paused else "schedule.resume"
                self.state.add_audit(AuditEntry(now, actor, action, task, note=note))
            return SchedulePause(task, r["paused"], r["paused_by"], r["paused_at"], r["note"], changed)

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
        with self.state.lock:
            r = self._tasks().get(task)
            if r is None:
                return None
            new = NewJob(
                job_id,
                task,
                r["queue"],
                key,
                self._input(task, r, scheduled_for, "manual"),
                r["max_attempts"],
                None,
                None,
                r["priority"],
            )
            (res,), fresh = insert_jobs(self.state, [new], now)
            self._wake(fresh)
            if res.deduped:
                return Triggered(task, None, key)
            self.state.add_history(HistoryEntry(res.id, now, "triggered", actor, note, {"task": task}))
            detail = {"job_id": res.id, "key": key}
            self.state.add_audit(AuditEntry(now, actor, "schedule.trigger", task, note=note, detail=detail))
            return Triggered(task, res.id, key)

    async def schedule_leader_tick(
        self, *, leader: str, holder: str, term: int, host: str, pid: int, now: datetime
    ) -> bool:
        with self.state.lock:
            if not self.state.leads(leader, holder, term, now):
                return False
            self._ticks()[leader] = {"holder": holder, "host": host, "pid": pid, "term": term, "ticked_at": now}
            return True

    async def schedule_leader_get(self, *, leader: str) -> SchedulerLeader | None:
        with self.state.lock:
            cur = self.state.leaders.get(leader)
            if cur is None:
                return None
            holder, term, until = cur.holder, cur.term, cur.until
            tick = self._ticks().get(leader)
            if tick is not None and (tick["term"], tick["holder"]) != (term, holder):
                tick = None
            return SchedulerLeader(
                holder,
                int(term),
                until,
                None if tick is None else tick["host"],
                None if tick is None else tick["pid"],
                None if tick is None else tick["ticked_at"],
            )
