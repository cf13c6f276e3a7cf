"""Why a queue's oldest waiting age grows, or why its jobs do not run: the causes as data.

Pure functions over what the Introspector read (the queue's counts, its workers, its jobs that
wait grouped by what they wait for, the limits that shed them), so each is tested without a
database. A queue nothing holds back says so, with its numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from engine.durations import duration
from engine.introspect.why import _in, _t, _tokens_sentence, pause_cause, slots_sentence, worker_causes
from engine.projections import Cause, LimitState, QueuePause, QueueStats, WaitGroup

if TYPE_CHECKING:  # the worker area's registry row; only named in annotations here
    from engine.records import WorkerRecord


def _jobs(n: int) -> str:
    return f"{n:,} job{'s' if n != 1 else ''}"


def wait_cause(queue: str, g: WaitGroup, now: datetime) -> Cause:
    """One group of a queue's waiting jobs, said with what they wait for and when the first runs."""
    first = f"{_t(g.next_at)} ({_in((g.next_at - now).total_seconds())})"
    are = "is" if g.count == 1 else "are"
    one = g.count == 1
    if g.kind == "delay":
        when = f"it runs at {first}" if one else f"the first runs at {first}"
        text = f"{_jobs(g.count)} of {queue} {are} delayed; {when}."
        return Cause("delayed", text, queue=queue, count=g.count, until=g.next_at)
    if g.kind == "sleep":
        when = f"until {first}" if one else f"; the first wakes at {first}"
        text = f"{_jobs(g.count)} of {queue} {are} sleeping in a step{' ' if one else ''}{when}."
        return Cause("sleep", text, queue=queue, count=g.count, until=g.next_at)
    if g.kind == "event":
        check = "now" if g.next_at <= now else _in((g.next_at - now).total_seconds())
        woken = "the job at once if its payload matches" if one else "the ones its payload matches at once"
        looks = "the job looks" if one else "the first looks"
        text = (
            f"{_jobs(g.count)} of {queue} {are} waiting for event {g.key!r}: sending it wakes {woken}; otherwise "
            f"{looks} for it again {check} (or gives up, if its timeout comes first)."
        )
        return Cause("event", text, queue=queue, count=g.count, event=g.key, next_check=g.next_at)
    if g.kind == "jobs":
        looks = "it looks" if one else "the first looks"
        text = f"{_jobs(g.count)} of {queue} {are} waiting in a step for other jobs to settle; {looks} at them again {first}."
        return Cause("jobs", text, queue=queue, count=g.count, next_check=g.next_at)
    again = f"at {first}" if g.next_at > now else "at the next claim (it is due now)"  # a parked group's next try
    if g.kind == "unknown":
        text = (
            f"{_jobs(g.count)} of {queue} {'waits' if one else 'wait'} for a worker that knows "
            f"{'its job' if one else 'their jobs'} (a release rolling out, or a job removed); "
            f"{'it' if one else 'the first'} is tried again {again}."
        )
        return Cause("unknown", text, queue=queue, count=g.count, until=g.next_at)
    what = f"the {g.kind} limit" if g.kind in ("rate", "concurrency") else "a limit"
    text = (
        f"{_jobs(g.count)} of {queue} {'was' if one else 'were'} shed by {what}"
        f"{f' {g.key}' if g.key else ''}; {'it' if one else 'the first'} is tried again {again}."
    )
    kind = g.kind if g.kind in ("rate", "concurrency") else None
    return Cause("limit", text, queue=queue, count=g.count, key=g.key, limit_kind=kind, until=g.next_at)


def _limit_detail(lim: LimitState, now: datetime) -> list[Cause]:
    out: list[Cause] = []
    if lim.slots:
        held = tuple(s for s in lim.slots if s.job_id is not None and (s.lease_until is None or s.lease_until >= now))
        text = slots_sentence(lim.key, len(lim.slots), held, now, None)
        out.append(Cause("slots", text, key=lim.key, limit=len(lim.slots), holders=held, limit_kind="concurrency"))
    if lim.tokens is not None:
        text = _tokens_sentence(lim.key, lim.tokens, None, counted=_t(lim.refilled_at) if lim.refilled_at else None)
        out.append(Cause("rate_limit", text, key=lim.key, tokens=lim.tokens, at=lim.refilled_at, limit_kind="rate"))
    return out


def _paused(q: QueueStats) -> Cause:
    """The pause, said of the queue: what waits behind it and how it ends."""
    c = pause_cause(QueuePause(q.name, True, q.paused_by, q.paused_at, q.pause_note))
    if not q.depth:
        return c
    held = f" {_jobs(q.depth)} {'waits' if q.depth == 1 else 'wait'} in it, claimed by no worker until it is resumed"
    return replace(c, text=f"{c.text}{held} (jobsctl resume {q.name}).", count=q.depth)


def _busy(q: QueueStats) -> Cause:
    """Every slot of the workers serving the queue is busy, said with what: a worker serving several
    queues may fill its slots with the others' jobs while none of this queue's runs."""
    own = min(q.running.value, q.slots_total)
    other = q.slots_total - own
    if not other:
        what = " with its own jobs"
    elif not own:
        what = f" with other queues' jobs (no job of {q.name} runs)"
    else:
        what = f": {own:,} with its own jobs, {other:,} with other queues' jobs"
    return Cause(
        "backlog",
        f"All {q.slots_total} worker slots serving {q.name} are busy{what}; {_jobs(q.depth)} "
        f"{'waits' if q.depth == 1 else 'wait'} for one to free.",
        queue=q.name,
        count=q.depth,
        limit=q.slots_total,
    )


def queue_causes(
    q: QueueStats,
    *,
    workers: Sequence[WorkerRecord] | None,
    stale_after: float,
    now: datetime,
    waits: Sequence[WaitGroup] = (),
    limits: Sequence[LimitState] = (),
) -> list[Cause]:
    out: list[Cause] = []
    if q.paused:  # first: while it holds, no worker claims the queue's jobs, whatever else is true
        out.append(_paused(q))
    if q.depth or waits:  # a missing or stale worker holds back only a queue with work waiting
        out.extend(worker_causes(q.name, workers, stale_after))
    if workers is not None and q.slots_total and q.slots_in_use >= q.slots_total and q.depth and not q.paused:
        out.append(_busy(q))
    out.extend(wait_cause(q.name, g, now) for g in waits)
    for lim in limits:
        out.extend(_limit_detail(lim, now))
    if out:
        return out
    if q.depth:
        age = duration(q.oldest_ready_age or 0)
        text = f"{_jobs(q.depth)} {'is' if q.depth == 1 else 'are'} ready in {q.name}, the oldest for {age}"
        text += f"; {q.workers} live worker{' serves' if q.workers == 1 else 's serve'} it" if q.workers else ""
        return [Cause("backlog", text + ".", queue=q.name, count=q.depth)]
    running = f"; {_jobs(q.running.value)} running" if q.running.value else ""
    serving = ""
    if workers is not None:
        serving = (
            f" ({q.workers} live worker{' serves' if q.workers == 1 else 's serve'} it)"
            if q.workers
            else " (no live worker serves it)"
        )
    text = f"Nothing holds queue {q.name} back: no job waits in it{running}{serving}."
    return [Cause("clear", text, queue=q.name)]


__all__ = ["queue_causes", "wait_cause"]
