"""Why a job is in its state now, or why a queue's oldest waiting age grows: the causes as data.

Pure functions over rows the Introspector has read, so each cause is tested without a database.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from engine.durations import relative
from engine.projections import Cause, JobSummary, LimitState, QueuePause, SlotHolder
from engine.retry import UNKNOWN_GRACE
from engine.runtime.worker_config import REAP_BEATS
from engine.types import JobRow, JobState, ready_since

if TYPE_CHECKING:  # the worker area's registry row; only named in annotations here
    from engine.records import WorkerRecord


def _t(dt: datetime | None) -> str:
    return "?" if dt is None else dt.strftime("%Y-%m-%d %H:%M:%S UTC")


def _in(seconds: float) -> str:
    """A span from now, said as everywhere else (engine.durations.relative): "in 2d23h", "1m30s ago"."""
    return relative(seconds)


def _tokens_sentence(key: str, tokens: float, refill: str | None, *, counted: str | None = None) -> str:
    """A bucket said in whole tokens (a job needs one, so a fraction of one is none), as of when
    they were counted: the stored count is the last take's, and tokens accrue since."""
    when = f" at {counted}" if counted else ""
    if tokens < 1:
        have = f"Rate limit {key} had no whole token left{when} ({tokens:.2f} of one)"
    else:
        have = f"Rate limit {key} had {int(tokens)} token{'s' if int(tokens) != 1 else ''} left{when}"
    return (
        f"{have}; the job is tried again {refill}, when a token is due."
        if refill
        else f"{have}; a token is due now, taken at the next claim."
    )


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


def stale_window(w: WorkerRecord, stale_after: float) -> float:
    """Seconds without a heartbeat past which worker ``w`` is stale: more than REAP_BEATS of its
    own heartbeats missed, or ``stale_after``, whichever is longer. The longer, as one beat late
    is no death: a worker beating each second is not called stale over a few seconds' stall (a
    database blip, a long collection), which neither the reaper nor its readiness acts on, and one
    beating each minute is not stale between two beats. A row that does not say its interval (a
    worker of a release before 0021) is held to ``stale_after`` alone."""
    beats = 0.0 if w.heartbeat_interval is None else REAP_BEATS * w.heartbeat_interval
    return max(stale_after, beats)


def is_stale(w: WorkerRecord, stale_after: float) -> bool:
    return w.heartbeat_age > stale_window(w, stale_after)


def worker_causes(queue: str, workers: Sequence[WorkerRecord] | None, stale_after: float) -> list[Cause]:
    """No worker serves the queue, or the ones that do have a stale heartbeat (is_stale)."""
    if workers is None:  # no worker registry in this driver: nothing to say either way
        return []
    serving = [w for w in workers if queue in w.queues]
    live = [w for w in serving if not is_stale(w, stale_after) and not w.stopping]
    out = [
        Cause(
            "stale_worker",
            f"Worker {w.id} on {w.host} serves {queue} but its last heartbeat was {relative(-w.heartbeat_age)}.",
            queue=queue,
            worker=w.id,
            heartbeat_at=w.heartbeat_at,
        )
        for w in serving
        if is_stale(w, stale_after)
    ]
    if not live:
        out.append(Cause("no_worker", f"No live worker serves queue {queue}.", queue=queue))
    return out


def next_try(at: datetime, now: datetime) -> str:
    """When a shed job is tried again: its run_at, or, past it, the next claim (it is due)."""
    return _in((at - now).total_seconds()) if at > now else "at the next claim (it is due now)"


def _since(dt: datetime | None, now: datetime) -> str:
    return "at an unknown time" if dt is None else f"{_in((dt - now).total_seconds())} ({_t(dt)})"


def limit_causes(row: JobRow, limits: Sequence[LimitState], now: datetime) -> list[Cause]:
    wait = row.wait or {}
    retry = next_try(row.run_at, now)
    out: list[Cause] = []
    for lim in limits:
        if lim.slots:
            held = tuple(
                s for s in lim.slots if s.job_id is not None and (s.lease_until is None or s.lease_until >= now)
            )
            out.append(
                Cause(
                    "slots",
                    slots_sentence(lim.key, len(lim.slots), held, now, retry),
                    key=lim.key,
                    limit=len(lim.slots),
                    holders=held,
                    until=_first_free(held),
                    limit_kind="concurrency",
                )
            )
        if lim.tokens is not None:
            refill = row.run_at if row.run_at > now else None
            out.append(
                Cause(
                    "rate_limit",
                    _tokens_sentence(
                        lim.key,
                        lim.tokens,
                        _in((refill - now).total_seconds()) if refill else None,
                        counted=_t(lim.refilled_at) if lim.refilled_at else None,
                    ),
                    key=lim.key,
                    tokens=lim.tokens,
                    refill_at=refill,
                    at=lim.refilled_at,
                    limit_kind="rate",
                )
            )
    if not out:
        kind = wait.get("limit") if wait.get("limit") in ("rate", "concurrency") else None
        key = wait.get("key")
        what = f"the {kind} limit" if kind else "a limit"
        out.append(
            Cause(
                "limit",
                f"Shed by {what}{f' {key}' if key else ''}; it is tried again {retry}.",
                key=key,
                until=row.run_at,
                limit_kind=kind,
            )
        )
    return out


def unknown_cause(row: JobRow, since: datetime, now: datetime) -> Cause:
    """A job parked by a worker whose release does not declare it (engine/runtime/execute.py)."""
    worker = (row.wait or {}).get("worker")
    dead_at = since + timedelta(seconds=UNKNOWN_GRACE)
    return Cause(
        "unknown",
        f"Worker {worker or '?'} does not know job {row.name!r}: a release that declares it is not serving "
        f"queue {row.queue} yet, or it was removed. It is tried again {next_try(row.run_at, now)}, and is dead "
        f"as X_UNKNOWN_JOB if no worker knows it by {_t(dead_at)} ({_in((dead_at - now).total_seconds())}).",
        queue=row.queue,
        worker=worker,
        until=row.run_at,
    )


def _first_free(held: Sequence[SlotHolder]) -> datetime | None:
    """When a held slot frees by itself: the first lease end of a holder that no longer runs (a
    running holder renews its lease, so its lease end says nothing about when it lets go)."""
    ends = [h.lease_until for h in held if h.state is not JobState.RUNNING and h.lease_until is not None]
    return min(ends) if ends else None


def slots_sentence(key: str, limit: int, held: Sequence[SlotHolder], now: datetime, retry: str | None) -> str:
    """The slots cause, true to its numbers and to who renews what: a running holder renews its
    slot's lease with its own, so its slot frees when it finishes, not when the lease ends.
    ``retry``: when the shed job is tried again (None: said of a queue, not of one job)."""
    if len(held) < limit:
        free = limit - len(held)
        taker = f"the job takes one when it is tried again {retry}" if retry else "a shed job takes one at its next try"
        return (
            f"{len(held)} of {limit} slots of {key} are held now; {free} {'is' if free == 1 else 'are'} free again "
            f"(a holder finished or its lease lapsed), so {taker}."
        )
    running = [h for h in held if h.state is JobState.RUNNING]
    stopped = len(held) - len(running)
    ends = _first_free(held)
    lapse = f"the first of their leases ends {_in((ends - now).total_seconds())}" if ends else "their leases lapse"
    if not stopped:
        text = (
            f"All {limit} slots of {key} are held by running jobs, which renew their slots while they run: "
            "a slot frees when one of them finishes"
        )
    elif running:
        text = (
            f"All {limit} slots of {key} are held: {len(running)} by running jobs, which renew their slots while "
            f"they run, and {stopped} by jobs no longer running, whose slots free when {lapse}"
        )
    else:
        text = f"All {limit} slots of {key} are held by jobs no longer running; their slots free when {lapse}"
    text += "."
    first = min((h for h in running if h.started_at), key=lambda h: h.started_at or now, default=None)
    if first is not None:
        text += f" The longest-running holder, on {first.worker or '?'}, started {_since(first.started_at, now)}."
    return f"{text} The job is tried again {retry}." if retry else text


def suspended_cause(row: JobRow, now: datetime, waited: Mapping[str, int] | None = None) -> Cause:
    """A sleep, an event wait, or a wait for other jobs (``waited``: how many of those are in
    each state now, "gone" for ids that name no job; None when they were not read): its next
    check (run_at) is not its timeout."""
    wait = row.wait or {}
    step = f", in step {wait['step']!r}" if wait.get("step") else ""
    if wait.get("kind") == "jobs":
        return _jobs_wait_cause(row, wait, step, now, waited)
    if wait.get("kind") != "event":
        return Cause(
            "sleep",
            f"Sleeping until {_t(row.run_at)} ({_in((row.run_at - now).total_seconds())}){step}.",
            until=row.run_at,
        )
    match = wait.get("match")
    timeout, check, end = _wait_ends(row, wait, now, "without the event")
    return Cause(
        "event",
        f"Waiting for event {wait.get('event')!r}{f' matching {match}' if match else ''}{step}: sending it wakes the "
        f"job at once; otherwise the job looks for it again {check}, and {end}.",
        event=wait.get("event"),
        match=match,
        until=timeout,
        next_check=row.run_at,
    )


def _wait_ends(row: JobRow, wait: dict[str, Any], now: datetime, without: str) -> tuple[datetime | None, str, str]:
    """A suspended wait's timeout, when it looks again, and how it ends, said."""
    try:
        timeout = datetime.fromisoformat(str(wait["timeout_at"])) if wait.get("timeout_at") else None
    except ValueError:
        timeout = None
    check = "now" if row.run_at <= now else _in((row.run_at - now).total_seconds())
    if timeout is None:
        end = "the wait has no timeout"
    elif timeout <= row.run_at:
        end = f"the wait times out then ({_t(timeout)}) and the job goes on {without}"
    else:
        end = f"the wait times out at {_t(timeout)} ({_in((timeout - now).total_seconds())})"
    return timeout, check, end


def _jobs_wait_cause(
    row: JobRow, wait: dict[str, Any], step: str, now: datetime, waited: Mapping[str, int] | None
) -> Cause:
    """A fan-in: the jobs a step waits for are read again at each look, not pushed to it."""
    ids = wait.get("jobs")
    n = len(ids) if isinstance(ids, list) else 0
    timeout, check, end = _wait_ends(row, wait, now, "without their outcomes")
    tally = ", ".join(f"{v:,} {k}" for k, v in sorted((waited or {}).items(), key=lambda kv: _TALLY.index(kv[0])))
    return Cause(
        "jobs",
        f"Waiting for {n:,} job{'s' if n != 1 else ''} to settle{step}{f' ({tally})' if tally else ''}: it looks at "
        f"them again {check} (a tenth of the time waited so far, at most its event poll apart) and goes on once "
        f"{_GOES_ON[bool(wait.get('fail_fast'))]}; {end}.",
        count=n,
        until=timeout,
        next_check=row.run_at,
    )


# When a fan-in goes on: every job settled, or (fail_fast) at the first that fails.
_GOES_ON = {
    False: "each has completed, died or been cancelled",
    True: "each has completed, or at the first that dies or is cancelled (fail_fast)",
}

# The order a fan-in's tally says its jobs' states in: settled first, then live, then gone.
_TALLY = ("completed", "dead", "cancelled", "running", "ready", "delayed", "parked", "suspended", "gone")


def job_causes(
    row: JobRow,
    *,
    now: datetime,
    pause: QueuePause | None,
    workers: Sequence[WorkerRecord] | None,
    stale_after: float,
    duplicate: JobSummary | None,
    limits: Sequence[LimitState] = (),
    waited: Mapping[str, int] | None = None,
    awaited_by: Sequence[JobRow] = (),
    fix: str | None = None,
) -> list[Cause]:
    """Why ``row`` is in its state now. ``fix``: what a dead job's last error said to do about it
    (engine.projections.latest_fix), None when it said nothing."""
    st = row.state
    out: list[Cause] = []
    if st is JobState.RUNNING:
        left = (row.lease_until - now).total_seconds() if row.lease_until else None
        lease = (
            f"its worker renews the lease while it runs (the current one ends {_in(left)})"
            if left is not None and left >= 0
            else "its lease has lapsed: the job is rescued unless its worker renews it"
            if left is not None
            else "its lease end is unknown"
        )
        out.append(
            Cause(
                "running",
                f"Running on {row.claimed_by} since {_since(row.claimed_at, now)}, attempt {row.attempt} of "
                f"{row.max_attempts}; {lease}.",
                worker=row.claimed_by,
                until=row.lease_until,
                at=row.claimed_at,
                attempt=row.attempt,
                max_attempts=row.max_attempts,
            )
        )
        w = next((w for w in workers or () if w.id == row.claimed_by), None)
        if w is not None and is_stale(w, stale_after):
            out.append(
                Cause(
                    "stale_worker",
                    f"Its worker {w.id} last sent a heartbeat {relative(-w.heartbeat_age)}; the lease will lapse and the job be rescued.",
                    worker=w.id,
                    heartbeat_at=w.heartbeat_at,
                )
            )
        return [*out, *(awaited_cause(p) for p in awaited_by)]
    if st is JobState.DEAD:
        out.append(dead_cause(row, fix))
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
        out.append(suspended_cause(row, now, waited))
    elif st is JobState.PARKED:
        since = ready_since(row, now)
        assert since is not None  # a parked row always waits
        unknown = (row.wait or {}).get("kind") == "unknown"
        out.extend([unknown_cause(row, since, now)] if unknown else limit_causes(row, limits, now))
        out.append(
            Cause(
                "waiting",
                f"Waiting since {_t(since)} ({_in((since - now).total_seconds())}), when it first fell due, "
                f"however often {'a worker has parked' if unknown else 'a limit has shed'} it since.",
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
        if pause is not None and pause.paused:  # first, as the queue's why says it: no worker claims past it
            out.insert(0, pause_cause(pause))
        fleet = worker_causes(row.queue, workers, stale_after)
        if any(c.kind == "no_worker" for c in fleet):  # a stale worker is this job's cause only when no live one serves
            out.extend(fleet)
        if not out:
            out.append(
                Cause(
                    "ready",
                    f"Ready since {_t(row.run_at)}: next for a worker of {row.queue}.",
                    queue=row.queue,
                    at=row.run_at,
                )
            )
    out.extend(awaited_cause(p) for p in awaited_by)
    return out


def dead_cause(row: JobRow, fix: str | None) -> Cause:
    """A dead job, with what to do about it in ``fix``: the fix its last error recorded, else the
    next step. A job that ran out of attempts may succeed when run again once its cause is dealt with
    (`jobsctl retry`); one its handler stopped as terminal would fail the same way, so its error
    comes first. The text says why a next step was chosen; the fix itself is its own field, which
    `jobsctl why` and the console print on a line of their own (the job detail shows it beside the
    error already)."""
    if fix:
        said = ""
    elif row.stop_reason == "terminal":
        fix = f"jobsctl show {row.id}"
        said = " Its error named no fix and stopped it as terminal, so a retry fails the same way: read it."
    else:
        fix = f"jobsctl retry {row.id}"
        said = " Its error named no fix; once its cause is dealt with, run it again from attempt 1."
    return Cause(
        "dead",
        f"Dead: {row.error_code or 'error'} after attempt {row.attempt} of {row.max_attempts} "
        f"({row.stop_reason or 'no stop reason'}).{said}",
        code=row.error_code,
        stop_reason=row.stop_reason,
        attempt=row.attempt,
        max_attempts=row.max_attempts,
        at=row.finished_at,
        fix=fix,
    )


def awaited_cause(fan_in: JobRow) -> Cause:
    """A suspended fan-in whose wait names this job: it goes on only once this one has settled."""
    wait = fan_in.wait or {}
    ids = wait.get("jobs")
    n = len(ids) if isinstance(ids, list) else 0
    step = f" in step {wait['step']!r}" if wait.get("step") else ""
    return Cause(
        "awaited",
        f"Job {fan_in.id} ({fan_in.name}) waits for this job{step}, one of {n:,}: it goes on once "
        f"{_GOES_ON[bool(wait.get('fail_fast'))]}.",
        job_id=fan_in.id,
        state=fan_in.state,
        count=n,
    )


__all__ = ["dead_cause", "job_causes", "limit_causes", "pause_cause", "slots_sentence", "worker_causes"]
