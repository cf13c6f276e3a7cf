"""Why-texts say something true and specific (engine/introspect/why.py, why_queue.py): a running
slot holder renews its lease, so its lease end is not when the slot frees; an event wait's next
check is not its timeout; a limit cause names its limit; a queue whose jobs sleep or wait for an
event says what they wait for; a queue nothing holds back says so with its numbers."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from engine.introspect.why import job_causes, limit_causes, suspended_cause
from engine.introspect.why_queue import queue_causes
from engine.projections import Count, LimitState, QueueStats, SlotHolder, WaitGroup
from engine.types import JobRow, JobState

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


def row(state: JobState, **kw) -> JobRow:  # type: ignore[no-untyped-def]
    base = JobRow(
        id="019b796d-d600-7027-a9b3-b30678e51061",
        name="render",
        queue="reports",
        tenant=None,
        idempotency_key="k",
        input={},
        state=state,
        priority=0,
        attempt=0,
        max_attempts=3,
        run=1,
        run_at=NOW + timedelta(seconds=3),
        created_at=NOW - timedelta(minutes=10),
        updated_at=NOW,
    )
    return replace(base, **kw)


def queue(name: str = "billing", **counts: int) -> QueueStats:
    c = {k: Count(counts.get(k, 0)) for k in ("ready", "delayed", "running", "suspended", "parked", "dead")}
    return QueueStats(name, **c, completed_last_hour=Count(0), oldest_ready_at=None, oldest_ready_age=None,
                      throughput=(0,) * 60, workers=1, slots_total=4, slots_in_use=0)  # fmt: skip


def test_a_running_slot_holder_is_said_to_renew_its_slot_not_to_free_it_when_its_lease_ends() -> None:
    holders = tuple(
        SlotHolder(f"j{i}", "w1", NOW + timedelta(seconds=23), JobState.RUNNING, NOW - timedelta(minutes=4 - i))
        for i in range(2)
    )
    parked = row(JobState.PARKED, wait={"kind": "limit", "limit": "concurrency", "key": "concurrency:render"})
    (slots,) = limit_causes(parked, [LimitState("concurrency:render", holders)], NOW)
    assert "lease ends" not in slots.text and "in 23s" not in slots.text
    assert "held by running jobs, which renew their slots while they run" in slots.text
    assert "The longest-running holder, on w1, started 4m00s ago (2026-01-01 11:56:00 UTC)." in slots.text
    assert slots.text.endswith("The job is tried again in 3s.") and slots.until is None


def test_a_slot_whose_holder_stopped_running_frees_when_its_lease_ends() -> None:
    holders = (
        SlotHolder("j1", "w1", NOW + timedelta(seconds=50), JobState.RUNNING, NOW - timedelta(seconds=30)),
        SlotHolder("j2", "w2", NOW + timedelta(seconds=23), JobState.COMPLETED, None),
    )
    parked = row(JobState.PARKED, wait={"kind": "limit", "limit": "concurrency", "key": "concurrency:render"})
    (slots,) = limit_causes(parked, [LimitState("concurrency:render", holders)], NOW)
    assert "1 by running jobs" in slots.text and "1 by jobs no longer running" in slots.text
    assert "the first of their leases ends in 23s" in slots.text and slots.until == NOW + timedelta(seconds=23)


def test_a_limit_cause_without_stored_state_names_its_limit_and_key() -> None:
    parked = row(JobState.PARKED, wait={"kind": "limit", "limit": "rate", "key": "tenant:acme"})
    (shed,) = limit_causes(parked, [], NOW)
    assert shed.text == "Shed by the rate limit tenant:acme; it is tried again in 3s."
    assert (shed.kind, shed.limit_kind, shed.key) == ("limit", "rate", "tenant:acme")


def test_a_rate_bucket_is_said_in_whole_tokens_as_of_when_they_were_counted() -> None:
    parked = row(JobState.PARKED, wait={"kind": "limit", "limit": "rate", "key": "tenant:acme"})
    bucket = LimitState("tenant:acme", tokens=0.01, refilled_at=NOW - timedelta(seconds=2))
    (rate,) = limit_causes(parked, [bucket], NOW)
    assert rate.text == (
        "Rate limit tenant:acme had no whole token left at 2026-01-01 11:59:58 UTC (0.01 of one); "
        "the job is tried again in 3s, when a token is due."
    )


def test_an_event_wait_says_its_next_check_and_its_timeout_apart() -> None:
    wait = {"kind": "event", "step": "approved", "event": "invoice.paid", "match": {"invoice": 7},
            "timeout_at": (NOW + timedelta(hours=1)).isoformat()}  # fmt: skip
    c = suspended_cause(row(JobState.SUSPENDED, wait=wait, run_at=NOW + timedelta(seconds=4)), NOW)
    assert (c.until, c.next_check) == (NOW + timedelta(hours=1), NOW + timedelta(seconds=4))
    assert "the job looks for it again in 4s" in c.text
    assert "the wait times out at 2026-01-01 13:00:00 UTC (in 1h00m)" in c.text
    forever = suspended_cause(row(JobState.SUSPENDED, wait={**wait, "timeout_at": None}), NOW)
    assert forever.until is None and forever.text.endswith("and the wait has no timeout.")
    due = {**wait, "timeout_at": (NOW + timedelta(seconds=3)).isoformat()}
    last = suspended_cause(row(JobState.SUSPENDED, wait=due), NOW)
    assert "the wait times out then" in last.text and "goes on without the event" in last.text


def test_a_running_job_says_its_lease_is_renewed_and_when_it_started() -> None:
    r = row(JobState.RUNNING, attempt=1, claimed_by="w1", claimed_at=NOW - timedelta(seconds=90),
            lease_until=NOW + timedelta(seconds=23))  # fmt: skip
    (running,) = job_causes(r, now=NOW, pause=None, workers=None, stale_after=30, duplicate=None)
    assert running.text == (
        "Running on w1 since 1m30s ago (2026-01-01 11:58:30 UTC), attempt 1 of 3; "
        "its worker renews the lease while it runs (the current one ends in 23s)."
    )


def test_a_queue_with_suspended_jobs_says_what_they_wait_for() -> None:
    waits = [
        WaitGroup(JobState.SUSPENDED, "event", "invoice.paid", 3, NOW + timedelta(seconds=4)),
        WaitGroup(JobState.SUSPENDED, "sleep", None, 1, NOW + timedelta(minutes=5)),
        WaitGroup(JobState.PARKED, "rate", "tenant:acme", 2, NOW + timedelta(seconds=2)),
        WaitGroup(JobState.DELAYED, "delay", None, 5, NOW + timedelta(minutes=2)),
    ]
    causes = queue_causes(queue(suspended=4, parked=2, delayed=5), workers=[], stale_after=30, now=NOW, waits=waits)
    texts = [c.text for c in causes if c.kind != "no_worker"]
    assert texts == [
        "3 jobs of billing are waiting for event 'invoice.paid': sending it wakes the ones its payload matches at "
        "once; otherwise the first looks for it again in 4s (or gives up, if its timeout comes first).",
        "1 job of billing is sleeping in a step until 2026-01-01 12:05:00 UTC (in 5m00s).",
        "2 jobs of billing were shed by the rate limit tenant:acme; the first is tried again at "
        "2026-01-01 12:00:02 UTC (in 2s).",
        "5 jobs of billing are delayed; the first runs at 2026-01-01 12:02:00 UTC (in 2m00s).",
    ]
    assert not any("Nothing" in t for t in texts)


def test_a_queue_nothing_holds_back_says_so_with_its_numbers() -> None:
    (clear,) = queue_causes(queue(running=2), workers=None, stale_after=30, now=NOW)
    assert (clear.kind, clear.text) == (
        "clear",
        "Nothing holds queue billing back: no job waits in it; 2 jobs running.",
    )
    (ready,) = queue_causes(replace(queue(ready=3), oldest_ready_age=4.2), workers=None, stale_after=30, now=NOW)
    assert ready.text == "3 jobs are ready in billing, the oldest for 4.2s; 1 live worker serves it."


def test_a_shed_job_past_its_retry_time_is_due_at_the_next_claim_never_tried_again_ago() -> None:
    parked = row(JobState.PARKED, run_at=NOW - timedelta(seconds=32), wait={"kind": "limit", "limit": "rate"})
    (shed,) = limit_causes(parked, [], NOW)
    assert shed.text == "Shed by the rate limit; it is tried again at the next claim (it is due now)."
    group = WaitGroup(JobState.PARKED, "rate", "k", 1, NOW - timedelta(seconds=32))
    (c,) = queue_causes(queue(parked=1), workers=None, stale_after=30, now=NOW, waits=[group])
    assert "ago" not in c.text and c.text.endswith("tried again at the next claim (it is due now).")
