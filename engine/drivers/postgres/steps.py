"""PostgresDriver's step store and events: each method runs named statements of sql/queries/steps.sql."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Hashable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson
import psycopg

from engine.codec import dumps, orjson_default
from engine.drivers.postgres.base import Conn, PostgresBase
from engine.drivers.postgres.groupwrite import GroupWriter
from engine.drivers.postgres.jobs import enqueue_in
from engine.drivers.sqlfiles import Q
from engine.types import Claim, EnqueueResult, JobState, NewJob, StoredStep

if TYPE_CHECKING:  # engine.records is imported where one is built: a worker never loads it
    from engine.records import EnqueuedBy, EventRecord, SentEvent, StepRecord, StepRetry

_RETRYABLE = ("dead", "completed")


def _stored(d: dict[str, Any]) -> StoredStep:
    return StoredStep(
        job_id=str(d["job_id"]),
        name=d["name"],
        seq=d["seq"],
        kind=d["kind"],
        status=d["status"],
        attempt=d["attempt"],
        run=d["run"],
        started_at=d["started_at"],
        finished_at=d["finished_at"],
        result=d["result"],
        error=d["error"],
        wait=d["wait"],
        event_id=None if d["event_id"] is None else str(d["event_id"]),
    )


def _row(claim: Claim, step: StoredStep) -> list[Any]:
    """step_save_many's row for ``step`` of ``claim``'s run."""
    text = dumps(step.result, what="step result") if step.status in ("completed", "timed-out") else None
    return [
        claim.job_id,
        claim.worker,
        claim.run,
        step.name,
        step.seq,
        step.kind,
        step.status,
        step.attempt,
        step.started_at,
        step.finished_at,
        None if text is None else {"v": orjson.Fragment(text)},
        step.error,
        None if text is None else len(text.encode()),
        step.wait,
        step.event_id,
    ]


class _Fenced(Exception):
    """The claim no longer holds the job: the transaction rolls back."""


def _record(d: dict[str, Any]) -> StepRecord:
    from engine.records import StepRecord

    return StepRecord(
        job_id=str(d["job_id"]),
        name=d["name"],
        seq=d["seq"],
        kind=d["kind"],
        status=d["status"],
        attempt=d["attempt"],
        started_at=d["started_at"],
        finished_at=d["finished_at"],
        duration=d["duration"],
        error=d["error"],
        result_size=d["result_size"],
    )


class PostgresSteps(PostgresBase):
    # Each event loop's step writer (a group is committed on the loop its writers wait on);
    # PostgresDriver sets it to {} and empties it at close.
    _step_writers: dict[asyncio.AbstractEventLoop, GroupWriter]

    async def step_load(self, *, job_id: str) -> list[StoredStep]:
        return [_stored(r) for r in await self._rows(Q.step_load, {"job_id": job_id})]

    async def step_save(self, *, claim: Claim, step: StoredStep) -> bool:
        # Group commit (groupwrite.py): the writes of this loop that come in while one is on the
        # wire share the next statement, each fenced on its own claim and answered on its own.
        return await self._step_writer().write((claim.job_id, step.name), _row(claim, step))

    async def step_enqueue(
        self, *, claim: Claim, step: StoredStep, jobs: Sequence[NewJob], now: datetime
    ) -> list[EnqueueResult] | None:
        # One transaction: the jobs, then the step fenced on the claim (FOR SHARE waits out a
        # cancel); a step the fence refuses rolls the jobs back with it. Their NOTIFY is sent at commit.
        try:
            async with self._connection() as conn, conn.transaction():
                out = await enqueue_in(self, conn, jobs, now)
                row = _row(claim, replace(step, result=[r.id for r in out]))
                doc = orjson.dumps([row], default=orjson_default).decode()
                if not await self._rows(Q.step_save_many, {"rows": doc}, conn=conn):
                    raise _Fenced
        except _Fenced:
            return None
        return out

    def _step_writer(self) -> GroupWriter:
        loop = asyncio.get_running_loop()
        writer = self._step_writers.get(loop)
        if writer is None:
            writer = self._step_writers[loop] = GroupWriter(self._step_save_group)
        return writer

    async def _step_save_group(self, rows: list[list[Any]]) -> set[Hashable]:
        doc = orjson.dumps(rows, default=orjson_default).decode()
        return {(r["job_id"], r["name"]) for r in await self._rows(Q.step_save_many, {"rows": doc})}

    async def step_enqueued_by(self, *, job_id: str) -> list[EnqueuedBy]:
        from engine.records import EnqueuedBy

        return [EnqueuedBy(r["job_id"], r["name"]) for r in await self._rows(Q.step_enqueued_by, {"id": job_id})]

    async def step_list(self, *, job_id: str) -> list[StepRecord]:
        return [_record(r) for r in await self._rows(Q.step_list, {"job_id": job_id})]

    async def event_send(
        self, *, id: str, name: str, payload: dict[str, Any], tenant: str | None, actor: str | None, now: datetime
    ) -> SentEvent:
        from engine.records import SentEvent

        r = await self._row(
            Q.event_send,
            {
                "id": id,
                "name": name,
                "tenant": tenant,
                "payload": dumps(payload, what="event payload"),
                "actor": actor,
                "now": now,
            },
        )
        assert r is not None  # an insert's returning row
        return SentEvent(str(r["id"]), r["name"], r["tenant"], r["sent_at"], r["woken"])

    async def event_find(
        self, *, job_id: str, name: str, tenant: str | None, match: dict[str, Any], since: datetime, now: datetime
    ) -> EventRecord | None:
        from engine.records import EventRecord

        r = await self._row(
            Q.event_find,
            {
                "job_id": job_id,
                "name": name,
                "tenant": tenant,
                "match": dumps(match, what="event match"),
                "since": since,
                "now": now,
            },
        )
        if r is None:
            return None
        return EventRecord(str(r["id"]), r["name"], r["tenant"], r["payload"], r["sent_at"], r["sent_by"])

    async def job_retry_from_step(
        self,
        *,
        job_id: str,
        step_name: str,
        tenant: str | None,
        now: datetime,
        actor: str | None,
        note: str | None = None,
    ) -> StepRetry:
        from engine.records import StepRetry

        try:
            async with self._connection() as conn, conn.transaction():
                return await self._retry_from_step(conn, job_id, step_name, tenant, now, actor, note)
        except psycopg.errors.UniqueViolation:
            # A live duplicate committed after the lookup: the whole change rolled back.
            j = await self._row(Q.job_get, {"id": job_id})
            assert j is not None  # it was locked a moment ago, and a job row is never deleted live
            live = await self._row(
                Q.job_find_live, {"name": j["name"], "tenant": j["tenant"], "key": j["idempotency_key"]}
            )
            return StepRetry(
                job_id, "duplicate", JobState(j["state"]), step_name, holder_id=str(live["id"]) if live else None
            )

    async def _retry_from_step(
        self,
        conn: Conn,
        job_id: str,
        step_name: str,
        tenant: str | None,
        now: datetime,
        actor: str | None,
        note: str | None,
    ) -> StepRetry:
        from engine.records import StepRetry, job_entry

        job = await self._row(Q.job_lock_for_step_retry, {"id": job_id, "tenant": tenant}, conn=conn)
        if job is None:
            return StepRetry(job_id, "not-found")
        state = JobState(job["state"])
        if job["state"] not in _RETRYABLE:
            return StepRetry(job_id, "invalid-state", state, step_name)
        steps = await self._rows(Q.step_list, {"job_id": job_id}, conn=conn)
        target = next((s for s in steps if s["name"] == step_name), None)
        if target is None:
            return StepRetry(job_id, "unknown-step", state, step_name, known_steps=tuple(s["name"] for s in steps))
        live = await self._row(
            Q.job_find_live, {"name": job["name"], "tenant": job["tenant"], "key": job["idempotency_key"]}, conn=conn
        )
        if live is not None:
            return StepRetry(job_id, "duplicate", state, step_name, holder_id=str(live["id"]))
        dropped = await self._rows(Q.step_discard_from, {"job_id": job_id, "seq": target["seq"]}, conn=conn)
        discarded = tuple(d["name"] for d in sorted(dropped, key=lambda d: (d["seq"], d["name"])))
        data = {"step": step_name, "from": job["state"], "discarded": list(discarded)}
        await self._row(
            Q.job_reset_from_step,
            {"id": job_id, "now": now, "actor": actor, "note": note, "data": json.dumps(data)},
            conn=conn,
        )
        said = job_entry(
            now, actor, "job.retry_from_step", job_id, name=job["name"], queue=job["queue"], tenant=job["tenant"],
            note=note, was=data["from"], step=step_name, discarded=data["discarded"],
        )  # fmt: skip
        await self._audit(said, conn)
        return StepRetry(job_id, "retried", state, step_name, discarded=discarded)
