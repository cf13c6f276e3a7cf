"""The Postgres driver's row mapping: the claim's fast path builds the same rows as JobRow(...)."""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime, timedelta

from engine.drivers.postgres.rows import CLAIM_FIELDS, claimed_rows
from engine.types import JobRow, JobState


def test_claimed_rows_equal_and_behave_like_dataclass_built_ones() -> None:
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
    )
    assert len(values) == len(CLAIM_FIELDS)
    (fast,) = claimed_rows([values], worker="w1", now=now, lease_until=until)
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
    )
    assert fast == slow and repr(fast) == repr(slow)
    # Filling the instance dict skips __init__: it is only sound while JobRow has no __post_init__,
    # and the dict keeps the dataclass's field order.
    assert not hasattr(JobRow, "__post_init__") and [f.name for f in fields(JobRow)] == list(fast.__dict__)
