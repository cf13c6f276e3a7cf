"""Why a job is in its state now, or why a queue's oldest-ready age grows: the causes as data.

Pure functions over rows the Introspector has read, so each cause is tested without a database.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from engine.projections import Cause, JobSummary, LimitState, QueuePause, QueueStats, SlotHolder
from engine.types import JobRow, JobState, ready_since

if TYPE_CHECKING:  # the worker area's registry row; only named in annotations here
    from engine.types import WorkerRecord


def _t(dt: datetime | None) -> str:
    return "?" if dt is None else dt.strftime("%Y-%m-%d %H:%M:%S UTC")


def _in(seconds: float) -> str:
    if abs(seconds) < 1:
        return "in under a second" if seconds >= 0 else "under a second ago"
    s = int(abs(seconds))
    text = f"{s}s" if s < 120 else f"{s // 60}m" if s < 7200 else f"{s // 3600}h"
    return f"in {text}" if seconds >= 0 else f"{text} ago"


def _tokens_sentence(key: str, tokens: float, refill: str | None) -> str:
    """A bucket said in whole tokens: a job needs one, so a fraction of one is none."""
    if tokens < 1:
        have = f"Rate limit {key} has no whole token left ({tokens:.2f} of one)"
    else:
        have = f"Rate limit {key} has {int(tokens)} token{'s' if int(tokens) != 1 else ''} left"
    return f"{have}; the next token arrives {refill}." if refill else f"{have}; a token is due now."


def pause_cause(p: QueuePause) -> Cause:
    who = f" by {p.by}" if p.by else ""
    note = f" ({p.note})" if p.note else ""
    return Cause(
        "paused",
        f"Queue {p.queue} is paused{who} since {_t(p.at)}{note}.",
        queue=p.queue,
        by=p.by,
        at=p.at,
        note=p.note,
    )


def worker_causes(queue: str, workers: Sequence[WorkerRecord] | None, stale_after: float) -> list[Cause]:
    """No worker serves the queue, or the ones that do have a stale heartbeat."""
    if workers is None:  # no worker registry in this driver: nothing to say either way
        return []
    serving = [w for w in workers if queue in w.queues]
    live = [w for w in serving if w.heartbeat_age <= stale_after and not w.stopping]
    out = [
        Cause(
            "stale_worker",
            f"Worker {w.id} on {w.host} serves {queue} but its last heartbeat was {int(w.heartbeat_age)}s ago.",
            queue=queue,
            worker=w.id,
            heartbeat_at=w.heartbeat_at,
        )
        for w in serving
        if w.heartbeat_age > stale_after
    ]
    if not live:
        out.append(Cause("no_worker", f"No live worker serves queue {queue}.", queue=queue))
    return out


def limit_causes(row: JobRow, limits: Sequence[LimitState], now: datetime) -> list[Cause]:
    wait = row.wait or {}
    out: list[Cause] = []
    for lim in limits:
        if lim.slots:
            held = tuple(
                s for s in lim.slots if s.job_id is not None and (s.lease_until is None or s.lease_until >= now)
            )
            ends = [s.lease_until for s in held if s.lease_until is not None]
            first = min(ends) if ends else None
            out.append(
                Cause(
                    "slots",
                    _slots_sentence(
                        lim.key, len(lim.slots), len(held), _in((first - now).total_seconds()) if first else None
                    ),
                    key=lim.key,
                    limit=len(lim.slots),
                    holders=held,
                    until=first,
                )
            )
        if lim.tokens is not None:
            refill = row.run_at if row.run_at > now else None
            out.append(
                Cause(
                    "rate_limit",
                    _tokens_sentence(lim.key, lim.tokens, _in((refill - now).total_seconds()) if refill else None),
                    key=lim.key,
                    tokens=lim.tokens,
                    refill_at=refill,
                    at=lim.refilled_at,
                )
            )
    if not out:
        what = wait.get("limit") or wait.get("reason") or wait.get("kind") or "a limit"
        key = wait.get("key")
        out.append(
            Cause(
                "limit",
                f"Shed by {what}{f' ({key})' if key else ''}; it is tried again {_in((row.run_at - now).total_seconds())}.",
                key=key,
                until=row.run_at,
            )
        )
    return out


def job_causes(
    row: JobRow,
    *,
    now: datetime,
    pause: QueuePause | None,
    workers: Sequence[WorkerRecord] | None,
    stale_after: float,
    duplicate: JobSummary | None,
    limits: Sequence[LimitState] = (),
) -> list[Cause]:
    st = row.state
    out: list[Cause] = []
    if st is JobState.RUNNING:
        left = (row.lease_until - now).total_seconds() if row.lease_until else None
        out.append(
            Cause(
                "running",
                f"Running on {row.claimed_by} (attempt {row.attempt} of {row.max_attempts}); lease ends {_in(left) if left is not None else '?'}.",
                worker=row.claimed_by,
                until=row.lease_until,
                attempt=row.attempt,
                max_attempts=row.max_attempts,
            )
        )
        w = next((w for w in workers or () if w.id == row.claimed_by), None)
        if w is not None and w.heartbeat_age > stale_after:
            out.append(
                Cause(
                    "stale_worker",
                    f"Its worker {w.id} last sent a heartbeat {int(w.heartbeat_age)}s ago; the lease will lapse and the job be rescued.",
                    worker=w.id,
                    heartbeat_at=w.heartbeat_at,
                )
            )
        return out
    if st is JobState.DEAD:
        out.append(
            Cause(
                "dead",
                f"Dead: {row.error_code or 'error'} after attempt {row.attempt} of {row.max_attempts} ({row.stop_reason or 'no stop reason'}).",
                code=row.error_code,
                stop_reason=row.stop_reason,
                attempt=row.attempt,
                max_attempts=row.max_attempts,
                at=row.finished_at,
            )
        )
    elif st in (JobState.COMPLETED, JobState.CANCELLED):
        out.append(
            Cause("finished", f"{st.value.capitalize()} at {_t(row.finished_at)}.", state=st, at=row.finished_at)
        )
    elif st is JobState.DELAYED and row.run_at > now:
        out.append(
            Cause(
                "delayed",
                f"Delayed until {_t(row.run_at)} ({_in((row.run_at - now).total_seconds())}).",
                until=row.run_at,
            )
        )
    elif st is JobState.SUSPENDED:
        wait = row.wait or {}
        if wait.get("kind") == "event":
            match = wait.get("match")
            matching = f" matching {match}" if match else ""
            out.append(
                Cause(
                    "event",
                    f"Waiting for event {wait.get('event')!r}{matching}: sending it wakes the job at once; otherwise it is looked for again {_in((row.run_at - now).total_seconds())} (or the wait times out then, if its timeout comes first).",
                    event=wait.get("event"),
                    match=match,
                    until=row.run_at,
                )
            )
        else:
            out.append(
                Cause(
                    "sleep",
                    f"Sleeping until {_t(row.run_at)} ({_in((row.run_at - now).total_seconds())}).",
                    until=row.run_at,
                )
            )
    elif st is JobState.PARKED:
        out.extend(limit_causes(row, limits, now))
        since = ready_since(row, now)
        assert since is not None  # a parked row always waits
        out.append(
            Cause(
                "waiting",
                f"Waiting since {_t(since)} ({_in((since - now).total_seconds())}), when it first fell due, "
                "however often a limit has shed it since.",
                queue=row.queue,
            )
        )
    if duplicate is not None:
        out.append(
            Cause(
                "duplicate",
                f"Live job {duplicate.id} ({duplicate.state.value}) holds the same idempotency key: a retry would dedupe to it.",
                job_id=duplicate.id,
                state=duplicate.state,
            )
        )
    if st in (JobState.READY, JobState.DELAYED, JobState.PARKED, JobState.SUSPENDED):
        if pause is not None and pause.paused:
            out.append(pause_cause(pause))
        out.extend(worker_causes(row.queue, workers, stale_after))
        if not out:
            out.append(
                Cause(
                    "ready",
                    f"Ready since {_t(row.run_at)}: next for a worker of {row.queue}.",
                    queue=row.queue,
                    at=row.run_at,
                )
            )
    return out


def queue_causes(
    q: QueueStats, *, workers: Sequence[WorkerRecord] | None, stale_after: float, limits: Sequence[LimitState] = ()
) -> list[Cause]:
    out: list[Cause] = []
    if q.paused:
        out.append(pause_cause(QueuePause(q.name, True, q.paused_by, q.paused_at, q.pause_note)))
    out.extend(worker_causes(q.name, workers, stale_after))
    if workers is not None and q.slots_total and q.slots_in_use >= q.slots_total and q.depth:
        out.append(
            Cause(
                "backlog",
                f"All {q.slots_total} worker slots serving {q.name} are busy; {q.depth} jobs wait.",
                queue=q.name,
                count=q.depth,
                limit=q.slots_total,
            )
        )
    if q.parked.value:
        out.append(
            Cause("limit", f"{q.parked} jobs of {q.name} are parked by a limit.", queue=q.name, count=q.parked.value)
        )
        for lim in limits:
            held = tuple(s for s in lim.slots if s.job_id is not None)
            if lim.slots:
                out.append(
                    Cause(
                        "slots",
                        f"Slots of {lim.key}: {len(held)} of {len(lim.slots)} held.",
                        key=lim.key,
                        limit=len(lim.slots),
                        holders=held,
                    )
                )
    if not out and q.depth:
        out.append(
            Cause(
                "backlog",
                f"{q.depth} jobs wait in {q.name}; the oldest for {int(q.oldest_ready_age or 0)}s.",
                queue=q.name,
                count=q.depth,
            )
        )
    return out


__all__ = ["job_causes", "queue_causes", "SlotHolder"]


def _slots_sentence(key: str, limit: int, held: int, first_end: str | None) -> str:
    """The slots cause, true to its numbers: all held, or some free again (a lease lapsed)."""
    end = f"the first lease ends {first_end}" if first_end else "a slot frees when a holder settles"
    if held >= limit:
        return f"All {limit} slots of {key} are held; {end}."
    free = limit - held
    return f"{held} of {limit} slots of {key} are held now; {free} {'is' if free == 1 else 'are'} free again (a lease lapsed), taken at the next claim."
