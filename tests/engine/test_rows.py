"""The Postgres driver's row mapping: the claim's positional fast path builds the same rows."""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime

from engine.drivers.postgres.rows import job_rows_by_position
from engine.types import JobRow, JobState


def test_rows_built_by_position_equal_and_behave_like_dataclass_built_ones() -> None:
    now = datetime(2026, 12, 3, tzinfo=UTC)
    values = ("0193-a", "send_email", "mail", "acme", "user:7", {"user_id": 7}, "running", 5, 1, 3, 2, now, now, now,
              "w1", now, now, None, None, "X: boom", "X", None, {"kind": "sleep"})
    (fast,) = job_rows_by_position([values])
    slow = JobRow(*values[:6], JobState.RUNNING, *values[7:])
    assert fast == slow and repr(fast) == repr(slow)
    assert fast.state is JobState.RUNNING
    # Filling the instance dict skips __init__: it is only sound while JobRow has no __post_init__.
    assert not hasattr(JobRow, "__post_init__") and [f.name for f in fields(JobRow)] == list(fast.__dict__)
