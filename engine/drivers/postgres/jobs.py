"""PostgresDriver's core queue: each method runs named statements from sql/queries/jobs.sql."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import orjson
from psycopg.rows import tuple_row

from engine.codec import dumps, orjson_default
from engine.drivers.postgres.pool import LoopPools
from engine.drivers.postgres.rows import attempt_record, history_entry, job_row
from engine.drivers.sqlfiles import Q
from engine.types import (
    Ack,
    AttemptRecord,
    CancelResult,
    Claim,
    ClaimedJob,
    EnqueueResult,
    HistoryEntry,
    JobRow,
    JobState,
    Nack,
    NewJob,
    Renewal,
)

_NACK_STATE = {"dead": "dead", "park": "parked", "suspend": "suspended"}
_STATES = {s.value: s for s in JobState}
_READY, _DELAYED = JobState.READY, JobState.DELAYED
_ATTEMPT_OUTCOME = {"retry": "retried", "dead": "dead", "park": "parked", "suspend": "suspended", "release": "released"}


class PostgresJobs:
    pools: LoopPools

    async def _all(self, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        async with self.pools.connection() as conn:
            cur = await conn.execute(sql, params)  # type: ignore[arg-type]
            return await cur.fetchall()  # type: ignore[return-value]

    async def _one(self, sql: str, params: dict[str, Any]) -> dict[str, Any] | None:
        rows = await self._all(sql, params)
        return rows[0] if rows else None

    async def job_enqueue(self, *, jobs: Sequence[NewJob], now: datetime) -> list[EnqueueResult]:
        if not jobs:
            return []
        # Two rows of one batch with the same dedupe key: the statement's snapshot cannot see the
        # first from the second's lookup, so the batch is collapsed here to its first holder.
        first: dict[tuple[str, str, str], int] = {}
        unique: list[NewJob] = []
        slot: list[int] = []  # per input row: its index in `unique`
        first_index: list[int] = []  # per input row: the input index of its key's first holder
        holder: dict[tuple[str, str, str], int] = {}
        for i, j in enumerate(jobs):
            k = (j.name, j.tenant or "", j.idempotency_key)
            if k not in first:
                first[k] = len(unique)
                holder[k] = i
                unique.append(j)
            slot.append(first[k])
            first_index.append(holder[k])
        # Inserted as given unless the statement says otherwise: ready, or delayed when due later.
        results = [EnqueueResult(j.id, False, _DELAYED if j.run_at is not None and j.run_at > now else _READY)
                   for j in unique]
        if len(unique) == 1:  # the single enqueue: a plain VALUES insert, not the batch's CTE
            j = unique[0]
            one = await self._one(Q.job_enqueue_one.text, {
                "id": j.id, "name": j.name, "queue": j.queue, "tenant": j.tenant, "key": j.idempotency_key,
                "input": j.input_text or dumps(j.input, job=j.name), "max_attempts": j.max_attempts,
                "run_at": j.run_at or now, "priority": j.priority, "now": now,
            })
            if one is None:
                results[0] = await self._live_holder(j, now)
        else:
            batch = orjson.dumps([
                [j.id, j.name, j.queue, j.tenant, j.idempotency_key, orjson.Fragment(j.input_text or dumps(j.input, job=j.name)),
                 j.max_attempts, j.run_at or now, j.priority]
                for j in unique
            ], default=orjson_default).decode()
            for r in await self._all(Q.job_enqueue.text, {"rows": batch, "now": now}):
                at = r["ord"] - 1
                if at < 0:  # the wake-up's row
                    continue
                if r["id"] is None:
                    results[at] = await self._live_holder(unique[at], now)
                else:
                    results[at] = EnqueueResult(str(r["id"]), True, _STATES[r["state"]])
        # A later row of the batch holding an earlier row's key answers that row, deduped.
        return [
            results[s] if i == seen else EnqueueResult(results[s].id, True, results[s].state)
            for i, (s, seen) in enumerate(zip(slot, first_index))
        ]

    async def _live_holder(self, new: NewJob, now: datetime) -> EnqueueResult:
        """A row that was not inserted: the live row holding its key committed after the insert's
        snapshot, so look it up now; if it went final in between, insert again."""
        live = await self._one(Q.job_find_live.text, {"name": new.name, "tenant": new.tenant, "key": new.idempotency_key})
        if live is None:
            return (await self.job_enqueue(jobs=[new], now=now))[0]
        return EnqueueResult(str(live["id"]), True, _STATES[live["state"]])

    async def job_claim(
        self, *, queues: Sequence[str], limit: int, worker: str, now: datetime, lease_seconds: float
    ) -> list[ClaimedJob]:
        rows = await self._all(Q.job_claim.text, {
            "queues": list(queues), "limit": limit, "worker": worker, "now": now,
            "lease_seconds": lease_seconds,
        })
        claimed = [job_row(r) for r in rows]
        claimed.sort(key=lambda r: (-r.priority, r.run_at, r.id))
        return [ClaimedJob(r) for r in claimed]

    async def job_ack_many(self, *, acks: Sequence[Ack], now: datetime) -> list[str]:
        if not acks:
            return []
        # ids and runs go as array literals (uuids and ints need no quoting): dumping them as
        # Python lists element by element was ~5% of a draining worker's CPU.
        async with self.pools.connection() as conn:
            cur = conn.cursor(row_factory=tuple_row)  # the ids come back as text: no UUID objects
            await cur.execute(Q.job_ack_many.text, {  # type: ignore[arg-type]
                "ids": "{" + ",".join([a.claim.job_id for a in acks]) + "}",
                "workers": [a.claim.worker for a in acks],
                "runs": "{" + ",".join([str(a.claim.run) for a in acks]) + "}",
                "results": [a.result_text if a.result_text is not None else dumps(a.result, what="result") for a in acks],
                "now": now,
            })
            return [r[0] for r in await cur.fetchall()]

    async def job_nack(self, *, nack: Nack, now: datetime) -> bool:
        counts = nack.outcome in ("retry", "dead")
        run_at: datetime | None = nack.run_at
        if nack.outcome in ("retry", "release"):
            run_at = run_at or now
            state = "delayed" if run_at > now else "ready"
        else:
            state = _NACK_STATE[nack.outcome]
        row = await self._one(Q.job_nack.text, {
            "id": nack.claim.job_id, "worker": nack.claim.worker, "run": nack.claim.run,
            "state": state, "run_at": run_at, "counts": counts, "writes_error": counts,
            "error": nack.error, "error_code": nack.error_code, "stop_reason": nack.stop_reason,
            "wait": None if nack.wait is None else json.dumps(nack.wait),
            "attempt_outcome": _ATTEMPT_OUTCOME[nack.outcome], "now": now,
        })
        return row is not None

    async def job_renew_many(
        self, *, claims: Sequence[Claim], now: datetime, lease_seconds: float
    ) -> list[Renewal]:
        if not claims:
            return []
        rows = await self._all(Q.job_renew_many.text, {
            "ids": [c.job_id for c in claims], "workers": [c.worker for c in claims],
            "runs": [c.run for c in claims], "now": now, "lease_seconds": lease_seconds,
        })
        by_id = {str(r["id"]): r for r in rows}
        return [Renewal(c, by_id[c.job_id]["status"], by_id[c.job_id]["lease_until"]) for c in claims]

    async def job_cancel(
        self, *, job_id: str, tenant: str | None, now: datetime, actor: str | None, note: str | None = None
    ) -> CancelResult | None:
        row = await self._one(Q.job_cancel.text, {"id": job_id, "tenant": tenant, "now": now, "actor": actor, "note": note})
        if row is None:
            return None
        prev = JobState(row["previous"])
        return CancelResult(job_id, prev, bool(row["cancelled"]), was_running=bool(row["cancelled"]) and prev is JobState.RUNNING)

    async def job_get(self, *, job_id: str) -> JobRow | None:
        row = await self._one(Q.job_get.text, {"id": job_id})
        return None if row is None else job_row(row)

    async def job_history(self, *, job_id: str) -> list[HistoryEntry]:
        return [history_entry(r) for r in await self._all(Q.job_history.text, {"id": job_id})]

    async def job_attempts(self, *, job_id: str) -> list[AttemptRecord]:
        return [attempt_record(r) for r in await self._all(Q.job_attempts.text, {"id": job_id})]
