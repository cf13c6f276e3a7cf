"""The memory driver's insert of new jobs (job_enqueue's, with its dedupe over live keys, I2),
shared by every area that enqueues: the queue, a step's fan-out, the outbox and the schedules."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from engine.codec import check_json
from engine.drivers.dedupe import dedupe_key
from engine.drivers.memory.state import MemoryState
from engine.types import EnqueueResult, JobRow, JobState, NewJob


def insert_jobs(state: MemoryState, jobs: Sequence[NewJob], now: datetime) -> tuple[list[EnqueueResult], set[str]]:
    """job_enqueue's insert (the dedupe over live keys, I2), for every area that enqueues; the
    caller wakes the queues answered (the statement's pg_notify). Every input is checked before
    any row is written, as the one statement is: an input that cannot be stored leaves nothing."""
    out: list[EnqueueResult] = []
    fresh: set[str] = set()  # the queues inserted into
    inputs = [check_json(new.input) for new in jobs]
    with state.lock:
        for new, checked in zip(jobs, inputs, strict=True):
            live_id = state.live_keys.get(dedupe_key(new.name, new.tenant, new.idempotency_key))
            if live_id is not None:
                out.append(EnqueueResult(live_id, True, state.jobs[live_id].state))
                continue
            run_at = new.run_at or now
            row = JobRow(
                id=new.id,
                name=new.name,
                queue=new.queue,
                tenant=new.tenant,
                idempotency_key=new.idempotency_key,
                input=checked,
                state=JobState.DELAYED if run_at > now else JobState.READY,
                priority=new.priority,
                attempt=0,
                max_attempts=new.max_attempts,
                run=0,
                run_at=run_at,
                created_at=new.created_at or now,
                updated_at=now,
                trace=None if new.trace is None else dict(new.trace),  # a copy, as the column is
            )
            state.put(row)
            fresh.add(row.queue)
            out.append(EnqueueResult(row.id, False, row.state))
    return out, fresh
