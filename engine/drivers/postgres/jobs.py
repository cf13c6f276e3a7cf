"""PostgresDriver's core queue: each method runs named statements from sql/queries/jobs.sql."""

from __future__ import annotations

import itertools
import json
import math
import time
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson
import psycopg

from engine.codec import dumps, orjson_default
from engine.drivers.dedupe import DedupeKey, dedupe_key
from engine.drivers.postgres.base import Conn, PostgresBase, Row
from engine.drivers.postgres.rows import attempt_record, history_entry, job_row
from engine.drivers.sqlfiles import Q
from engine.types import Ack, Claim, EnqueueResult, JobRow, JobState, Nack, NewJob, Renewal

if TYPE_CHECKING:  # engine.records is imported where one is built: a worker never loads it
    from engine.records import AttemptRecord, CancelResult, HistoryEntry

_NACK_STATE = {"dead": "dead", "park": "parked", "suspend": "suspended"}
_STATES = {s.value: s for s in JobState}
_READY, _DELAYED = JobState.READY, JobState.DELAYED
_ATTEMPT_OUTCOME = {"retry": "retried", "dead": "dead", "park": "parked", "suspend": "suspended", "release": "released"}


def ack_params(acks: Sequence[Ack], worker: str, now: datetime) -> dict[str, Any]:
    """job_ack_many's parameters for acks of one claimant: the ids as an array literal (uuids need
    no quoting; dumping a Python list element by element was ~5% of a draining worker's CPU), and
    each one's run and result in one jsonb object keyed by id (the statement says why)."""
    ids = [a.claim.job_id for a in acks]
    return {
        "ids": "{" + ",".join(ids) + "}",
        "worker": worker,
        "fence": ack_fence(
            ids,
            [a.claim.run for a in acks],
            [a.result_text if a.result_text is not None else dumps(a.result, what="result") for a in acks],
        ),
        "now": now,
    }


def ack_fence(ids: Sequence[str], runs: Sequence[int], results: Sequence[str]) -> str:
    """job_ack_many's %(fence)s: {"<id>": [run, result]}, each result as its JSON text."""
    return orjson.dumps({i: [r, orjson.Fragment(t)] for i, r, t in zip(ids, runs, results)}).decode()


# A batch that replays a live key sends its rows twice (job_enqueue_fresh, then job_enqueue) and
# leaves one "duplicate key value violates unique constraint" line in the server's log: after one,
# this driver's batches take job_enqueue directly for this long.
REPLAY_BACKOFF = 60.0
DEDUPE_INDEX = "job_dedupe_live_v3"


class PostgresJobs(PostgresBase):
    # A batch goes out as a plain INSERT first, and again with ON CONFLICT only when it replays
    # a live key (job_enqueue_fresh): False sends every batch with ON CONFLICT. PostgresDriver sets it.
    optimistic_batches: bool = True
    _replayed_at: float = -math.inf  # when a batch of this driver last replayed a live key

    async def job_enqueue(self, *, jobs: Sequence[NewJob], now: datetime) -> list[EnqueueResult]:
        if not jobs:
            return []
        batch = _Collapsed(jobs, now)
        # The single enqueue: a plain VALUES insert, not the batch's CTE. A job carrying a trace
        # context goes as a batch of one: the single statement takes no trace parameter (a null
        # one cost its every call ~7 us of client CPU: python -m bench.ab, 11 rounds).
        if len(batch.unique) == 1 and batch.unique[0].trace is None:
            j = batch.unique[0]
            values = {
                "id": j.id,
                "name": j.name,
                "queue": j.queue,
                "tenant": j.tenant,
                "key": j.idempotency_key,
                "input": j.input_text or dumps(j.input, job=j.name),
                "max_attempts": j.max_attempts,
                "run_at": j.run_at,
                "priority": j.priority,
                "created_at": j.created_at,
                "now": now,
            }
            if await self._raw(Q.job_enqueue_one, values) is None:
                batch.results[0] = await _live_holder(self, j, now, None)
            return batch.answers()
        params = {"rows": batch.doc(), "now": now}
        if self._fresh_first():
            try:
                await self._row(Q.job_enqueue_fresh, params)
                return batch.answers()
            except psycopg.errors.UniqueViolation as exc:
                self._replayed(exc)
        return await _answered(self, batch, await self._rows(Q.job_enqueue, params), now, None)

    async def job_enqueue_chunks(self, *, chunks: Iterable[Sequence[NewJob]], now: datetime) -> list[EnqueueResult]:
        # One transaction, a statement a chunk, each out as soon as it is built: through libpq's
        # pipeline (_raw_each) fresh first, as job_enqueue; a replayed key rolls the transaction
        # back, and the batch goes again with ON CONFLICT through psycopg's (_pipelined, whose
        # answers it reads), the chunks already built then the rest.
        built: list[_Collapsed] = []
        rest = iter(chunks)

        def building() -> Iterator[_Collapsed]:
            for chunk in rest:  # a chunk that raises rolls back the ones sent before it
                built.append(_Collapsed(chunk, now))
                yield built[-1]

        # A later chunk sees an earlier one's rows (one transaction), so a key held across chunks
        # dedupes as it does within one.
        if self._fresh_first():
            try:
                await self._raw_each(Q.job_enqueue_fresh, (b.params() for b in building()))
                return [answer for batch in built for answer in batch.answers()]
            except psycopg.errors.UniqueViolation as exc:
                self._replayed(exc)
        sent: list[_Collapsed] = []

        def sending() -> Iterator[dict[str, Any]]:
            for batch in itertools.chain(built, building()):
                sent.append(batch)
                yield batch.params()

        out: list[EnqueueResult] = []
        for batch, rows in zip(sent, await self._pipelined(Q.job_enqueue, sending())):
            out += await _answered(self, batch, rows, now, None)
        return out

    def _fresh_first(self) -> bool:
        """Whether a batch goes out as job_enqueue_fresh first: unless turned off, or a batch of
        this driver replayed a live key less than REPLAY_BACKOFF seconds ago."""
        return self.optimistic_batches and time.monotonic() - self._replayed_at >= REPLAY_BACKOFF

    def _replayed(self, exc: psycopg.errors.UniqueViolation) -> None:
        if exc.diag.constraint_name != DEDUPE_INDEX:  # not a replayed key (an id minted twice)
            raise exc
        self._replayed_at = time.monotonic()

    async def job_ack_many(self, *, acks: Sequence[Ack], now: datetime) -> list[str]:
        by_worker: dict[str, list[Ack]] = {}
        for a in acks:
            by_worker.setdefault(a.claim.worker, []).append(a)
        landed: list[str] = []
        for worker, mine in by_worker.items():  # one claimant: a worker's ack buffer
            rows = await self._run(Q.job_ack_many, ack_params(mine, worker, now), tuples=True)
            landed += [r[0] for r in rows]
        return landed

    async def job_nack(self, *, nack: Nack, now: datetime) -> bool:
        counts = nack.outcome in ("retry", "dead")
        run_at: datetime | None = nack.run_at
        if nack.outcome in ("retry", "release"):
            run_at = run_at or now
            state = "delayed" if run_at > now else "ready"
        else:
            state = _NACK_STATE[nack.outcome]
        row = await self._row(
            Q.job_nack,
            {
                "id": nack.claim.job_id,
                "worker": nack.claim.worker,
                "run": nack.claim.run,
                "state": state,
                "run_at": run_at,
                "counts": counts,
                "writes_error": counts,
                "error": nack.error,
                "error_code": nack.error_code,
                "traceback": nack.traceback,
                "fix": nack.fix,
                "stop_reason": nack.stop_reason,
                "wait": None if nack.wait is None else json.dumps(nack.wait),
                "attempt_outcome": _ATTEMPT_OUTCOME[nack.outcome],
                "now": now,
            },
        )
        return row is not None

    async def job_renew_many(self, *, claims: Sequence[Claim], now: datetime, lease_seconds: float) -> list[Renewal]:
        if not claims:
            return []
        rows = await self._rows(
            Q.job_renew_many,
            {
                "ids": [c.job_id for c in claims],
                "workers": [c.worker for c in claims],
                "runs": [c.run for c in claims],
                "now": now,
                "lease_seconds": lease_seconds,
            },
        )
        by_id = {str(r["id"]): r for r in rows}
        return [Renewal(c, by_id[c.job_id]["status"], by_id[c.job_id]["lease_until"]) for c in claims]

    async def job_cancel(
        self, *, job_id: str, tenant: str | None, now: datetime, actor: str | None, note: str | None = None
    ) -> CancelResult | None:
        from engine.records import CancelResult, job_entry

        async with self._connection() as conn, conn.transaction():
            p = {"id": job_id, "tenant": tenant, "now": now, "actor": actor, "note": note}
            row = await self._row(Q.job_cancel, p, conn=conn)
            if row is None:
                return None
            prev = JobState(row["previous"])
            if row["cancelled"]:  # its audit entry, in its transaction: the cancelled row names the job
                job = await self._row(Q.job_get, {"id": job_id}, conn=conn)
                assert job is not None  # cancelled a moment ago in this transaction
                said = job_entry(
                    now, actor, "job.cancel", job_id, name=job["name"], queue=job["queue"], tenant=job["tenant"],
                    note=note, was=prev.value,
                )  # fmt: skip
                await self._audit(said, conn)
        return CancelResult(
            job_id, prev, bool(row["cancelled"]), was_running=bool(row["cancelled"]) and prev is JobState.RUNNING
        )

    async def job_get(self, *, job_id: str) -> JobRow | None:
        row = await self._row(Q.job_get, {"id": job_id})
        return None if row is None else job_row(row)

    async def job_get_many(self, *, job_ids: Sequence[str]) -> list[JobRow]:
        return [job_row(r) for r in await self._rows(Q.job_get_many, {"ids": list(job_ids)})]

    async def job_awaited_by(self, *, job_id: str) -> list[JobRow]:
        return sorted((job_row(r) for r in await self._rows(Q.job_awaited_by, {"id": job_id})), key=lambda r: r.id)

    async def job_history(self, *, job_id: str) -> list[HistoryEntry]:
        return [history_entry(r) for r in await self._rows(Q.job_history, {"id": job_id})]

    async def job_attempts(self, *, job_id: str) -> list[AttemptRecord]:
        return [attempt_record(r) for r in await self._rows(Q.job_attempts, {"id": job_id})]


async def enqueue_in(db: PostgresBase, conn: Conn | None, jobs: Sequence[NewJob], now: datetime) -> list[EnqueueResult]:
    """job_enqueue's answers for ``jobs`` inserted by the ON CONFLICT statement, on ``conn`` inside
    its caller's transaction (a fresh-first batch's unique violation would abort that transaction),
    else on a connection of its own."""
    batch = _Collapsed(jobs, now)
    return await _answered(db, batch, await db._rows(Q.job_enqueue, batch.params(), conn=conn), now, conn)


async def _answered(
    db: PostgresBase, batch: _Collapsed, rows: list[Row], now: datetime, conn: Conn | None
) -> list[EnqueueResult]:
    """job_enqueue's answer for ``batch``: only the rows it did not insert, each with the live
    row holding its key (none: that row committed after the statement's snapshot)."""
    for r in rows:
        at = r["ord"] - 1
        if at < 0:  # the wake-up's row
            continue
        if r["id"] is None:
            batch.results[at] = await _live_holder(db, batch.unique[at], now, conn)
        else:
            batch.results[at] = EnqueueResult(str(r["id"]), True, _STATES[r["state"]])
    return batch.answers()


async def _live_holder(db: PostgresBase, new: NewJob, now: datetime, conn: Conn | None) -> EnqueueResult:
    """A row that was not inserted: the live row holding its key committed after the insert's
    snapshot, so look it up now; if it went final in between, insert again."""
    live = await db._row(
        Q.job_find_live, {"name": new.name, "tenant": new.tenant, "key": new.idempotency_key}, conn=conn
    )
    if live is None:
        return (await enqueue_in(db, conn, [new], now))[0]
    return EnqueueResult(str(live["id"]), True, _STATES[live["state"]])


class _Collapsed:
    """A batch collapsed to the first holder of each dedupe key: the statement's snapshot cannot
    see one of its own rows from another's lookup, so two rows with one key would both insert."""

    def __init__(self, jobs: Sequence[NewJob], now: datetime) -> None:
        self.now = now
        keys = [dedupe_key(j.name, j.tenant, j.idempotency_key) for j in jobs]
        self.unique: list[NewJob] = list(jobs)
        # Per input row: its index in `unique`, and the input index of its key's first holder;
        # None when every key is held once (the usual batch): each row is its own.
        self.slot: list[int] | None = None
        self.first_index: list[int] = []
        if len(set(keys)) < len(keys):
            first: dict[DedupeKey, int] = {}
            holder: dict[DedupeKey, int] = {}
            self.unique, self.slot = [], []
            for i, (j, k) in enumerate(zip(jobs, keys)):
                if k not in first:
                    first[k] = len(self.unique)
                    holder[k] = i
                    self.unique.append(j)
                self.slot.append(first[k])
                self.first_index.append(holder[k])
        # Inserted as given unless the statement says otherwise: ready, or delayed when due later.
        self.results = [
            EnqueueResult(j.id, False, _DELAYED if j.run_at is not None and j.run_at > now else _READY)
            for j in self.unique
        ]

    def params(self) -> dict[str, Any]:
        """job_enqueue's (and job_enqueue_fresh's) parameters for this batch."""
        return {"rows": self.doc(), "now": self.now}

    def doc(self) -> str:
        """job_enqueue's one parameter: a jsonb array of [id, name, queue, tenant, key, input,
        max_attempts, run_at, priority] rows, and created_at tenth when the job has its own (a
        staged job's stage time; the statements take now when it is null or absent) or a trace
        context, eleventh when it has one (absent is SQL null; a JSON null would be jsonb's)."""
        now = self.now
        return orjson.dumps(
            [
                [
                    j.id,
                    j.name,
                    j.queue,
                    j.tenant,
                    j.idempotency_key,
                    orjson.Fragment(j.input_text or dumps(j.input, job=j.name)),
                    j.max_attempts,
                    j.run_at or now,
                    j.priority,
                    *(
                        ()
                        if j.created_at is None and j.trace is None
                        else (j.created_at,)
                        if j.trace is None
                        else (j.created_at, j.trace)
                    ),
                ]
                for j in self.unique
            ],
            default=orjson_default,
        ).decode()

    def answers(self) -> list[EnqueueResult]:
        """One answer per input row: a later row holding an earlier row's key answers that row, deduped."""
        res = self.results
        if self.slot is None:
            return list(res)
        return [
            res[s] if i == seen else EnqueueResult(res[s].id, True, res[s].state)
            for i, (s, seen) in enumerate(zip(self.slot, self.first_index))
        ]
