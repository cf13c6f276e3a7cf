"""PostgresDriver's scheduler tables: each method runs a named statement of
sql/queries/schedules.sql (the fenced enqueue of an occurrence is one statement). An operator's
pause, resume or trigger that changed something writes its audit entry in the same transaction."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import orjson

from engine.drivers.postgres.base import PostgresBase
from engine.drivers.sqlfiles import Q

if TYPE_CHECKING:  # each method imports the rows it builds: a worker that runs no scheduler never loads them
    from engine.schedule import Advanced, SchedulePause, SchedulerLeader, ScheduleRow, TaskDecl, Triggered


class PostgresSchedules(PostgresBase):
    async def schedule_declare(self, *, tasks: Sequence[TaskDecl], now: datetime) -> None:
        if not tasks:
            return
        doc = orjson.dumps(
            [
                [
                    t.name,
                    t.cron,
                    t.timezone,
                    t.catch_up,
                    t.max_catch_up,
                    t.queue,
                    t.max_attempts,
                    t.priority,
                    orjson.Fragment(t.input_text),
                ]
                for t in tasks
            ]
        ).decode()
        await self._exec(Q.schedule_declare, {"tasks": doc, "now": now})

    async def schedule_list(self) -> list[ScheduleRow]:
        from engine.schedule import ScheduleRow

        return [
            ScheduleRow(
                r["task"],
                r["cron"],
                r["timezone"],
                r["catch_up"],
                int(r["max_catch_up"]),
                r["queue"],
                r["declared_at"],
                r["watermark"],
                int(r["skipped"]),
                r["last_at"],
                None if r["last_job_id"] is None else str(r["last_job_id"]),
                r["last_job_state"],
                bool(r["paused"]),
                r["paused_by"],
                r["paused_at"],
                r["note"],
                r["seen_at"],
            )
            for r in await self._rows(Q.schedule_list, {})
        ]

    async def schedule_seen(self, *, tasks: Sequence[str], now: datetime) -> None:
        if tasks:
            await self._exec(Q.schedule_seen, {"tasks": list(tasks), "now": now})

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
        from engine.schedule import Advanced

        row = await self._row(
            Q.schedule_advance,
            {
                "task": task,
                "expected": expected,
                "at": at,
                "skipped": skipped,
                "job_id": job_id,
                "key": key,
                "scheduled_for": scheduled_for,
                "leader": leader,
                "holder": holder,
                "term": term,
                "now": now,
            },
        )
        if row is None or not row["moved"]:
            return Advanced(False)
        return Advanced(True, None if row["inserted"] is None else str(row["inserted"]))

    async def schedule_pause(
        self, *, task: str, paused: bool, actor: str | None, note: str | None, now: datetime
    ) -> SchedulePause | None:
        from engine.records import AuditEntry
        from engine.schedule import SchedulePause

        p = {"task": task, "paused": paused, "actor": actor, "note": note, "now": now}
        async with self._connection() as conn, conn.transaction():  # the change and its audit entry
            row = await self._row(Q.schedule_pause_set, p, conn=conn)
            if row is not None and row["changed"]:
                action = "schedule.pause" if paused else "schedule.resume"
                await self._audit(AuditEntry(now, actor, action, task, note=note), conn)
        if row is None:
            return None
        return SchedulePause(
            row["task"], bool(row["paused"]), row["paused_by"], row["paused_at"], row["note"], bool(row["changed"])
        )

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
        from engine.records import AuditEntry
        from engine.schedule import Triggered

        p = {
            "task": task,
            "job_id": job_id,
            "key": key,
            "scheduled_for": scheduled_for,
            "actor": actor,
            "note": note,
            "now": now,
        }
        async with self._connection() as conn, conn.transaction():  # the job and its audit entry
            row = await self._row(Q.schedule_trigger, p, conn=conn)
            # None: no such task, or a live job holds the key and nothing was enqueued (no entry)
            enqueued = None if row is None or row["id"] is None else str(row["id"])
            if enqueued is not None:
                detail = {"job_id": enqueued, "key": key}
                await self._audit(AuditEntry(now, actor, "schedule.trigger", task, note=note, detail=detail), conn)
        if row is None or not row["found"]:
            return None
        return Triggered(task, enqueued, key)

    async def schedule_leader_tick(
        self, *, leader: str, holder: str, term: int, host: str, pid: int, now: datetime
    ) -> bool:
        row = await self._row(
            Q.schedule_leader_tick,
            {"leader": leader, "holder": holder, "term": term, "host": host, "pid": pid, "now": now},
        )
        return bool(row and row["ticked"])

    async def schedule_leader_get(self, *, leader: str) -> SchedulerLeader | None:
        from engine.schedule import SchedulerLeader

        r = await self._row(Q.schedule_leader_get, {"leader": leader})
        if r is None:
            return None
        return SchedulerLeader(r["holder"], int(r["term"]), r["lease_until"], r["host"], r["pid"], r["ticked_at"])
