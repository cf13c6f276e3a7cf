"""The Postgres driver's row mapping: the claim's fast path builds the same jobs as ClaimedJob(JobRow(...))."""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime, timedelta

from engine.drivers.postgres.rows import CLAIM_FIELDS, claimed_jobs
from engine.types import Claim, ClaimedJob, JobRow, JobState


def test_claimed_jobs_equal_and_behave_like_dataclass_built_ones() -> None:
    now = datetime(2026, 12, 3, tzinfo=UTC)
    until = now + timedelta(seconds=30)
    values = (
        "0193-a",
        "send_email",
        "mail",
        "acme",
        "user:7",
        {"user_id": 7},
        5,
        1,
        3,
        2,
        now - timedelta(hours=1),
        now - timedelta(hours=2),
        "X: boom",
        "X",
        {"kind": "limit"},
        now - timedelta(minutes=5),
        {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
    )
    assert len(values) == len(CLAIM_FIELDS)
    (built,) = claimed_jobs([values], worker="w1", now=now, lease_until=until)
    fast = built.row
    slow = JobRow(
        id="0193-a",
        name="send_email",
        queue="mail",
        tenant="acme",
        idempotency_key="user:7",
        input={"user_id": 7},
        state=JobState.RUNNING,
        priority=5,
        attempt=1,
        max_attempts=3,
        run=2,
        run_at=now - timedelta(hours=1),
        created_at=now - timedelta(hours=2),
        updated_at=now,
        claimed_by="w1",
        claimed_at=now,
        lease_until=until,
        finished_at=None,
        result=None,
        last_error="X: boom",
        error_code="X",
        stop_reason=None,
        wait={"kind": "limit"},
        waiting_since=now - timedelta(minutes=5),
        trace={"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
    )
    assert fast == slow and repr(fast) == repr(slow)
    assert built == ClaimedJob(slow) and built.claim == ClaimedJob(slow).claim == Claim("0193-a", "w1", 2)
    # Filling the instance dict skips __init__: it is only sound while JobRow has no __post_init__,
    # and the dict keeps the dataclass's field order.
    assert not hasattr(JobRow, "__post_init__") and [f.name for f in fields(JobRow)] == list(fast.__dict__)


def test_claimed_jobs_come_in_claim_order_priority_first_then_due_time_then_id() -> None:
    now = datetime(2026, 12, 3, tzinfo=UTC)

    def values(job_id: str, priority: int, run_at: datetime) -> tuple[object, ...]:
        return (job_id, "n", "q", None, job_id, None, priority, 1, 3, 1, run_at, now, None, None, None, None, None)

    rows = [
        values("c", 0, now - timedelta(seconds=1)),
        values("b", 5, now),
        values("a", 0, now - timedelta(seconds=1)),
        values("d", 0, now - timedelta(seconds=9)),
    ]
    built = claimed_jobs(rows, worker="w1", now=now, lease_until=now)
    assert [cj.row.id for cj in built] == ["b", "d", "a", "c"]
    assert [cj.claim for cj in built] == [Claim(i, "w1", 1) for i in "bdac"]
