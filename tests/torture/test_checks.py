"""The torture run's stalled-worker check on evidence written by hand: a job whose lost run was
its last attempt is dead by the rescuer's rule, not a job left undelivered."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bench.torture.checks import Evidence, stalled_worker


def _evidence(job: dict[str, Any]) -> Evidence:
    stall = {"log": "w1.log", "held": [{"job_id": "j1", "run": 3, "worker": "w1"}]}
    told = {"w1.log": [{"event": "jobs.lease.lost", "job_id": "j1"}]}
    return Evidence(
        jobs=[{"id": "j1", "key": "unclassified-1-1", "claimed_by": "w1", **job}],
        executions=[], steps=[], attempts=[], outbox=[], orders=set(), schedule=[], direct_counts={},
        projected={}, sent={}, now=datetime(2026, 12, 4, tzinfo=UTC), stalls=[stall], stalled_events=told,
    )  # fmt: skip


def test_i13_a_stalled_run_that_was_the_last_attempt_may_end_dead_by_the_lease_rule() -> None:
    lost_last = {"run": 3, "state": "dead", "error_code": "X_LEASE_LOST", "attempt": 3, "max_attempts": 3}
    assert stalled_worker(_evidence(lost_last)).ok


def test_i13_a_stalled_run_left_undelivered_or_dead_for_another_reason_fails_the_check() -> None:
    for job in (
        {"run": 3, "state": "running", "error_code": None, "attempt": 3, "max_attempts": 5},
        {"run": 3, "state": "dead", "error_code": "X_LEASE_LOST", "attempt": 2, "max_attempts": 5},
        {"run": 3, "state": "dead", "error_code": "X_HANDLER_FAILED", "attempt": 3, "max_attempts": 3},
    ):
        check = stalled_worker(_evidence(job))
        assert not check.ok and "never re-delivered" in check.problems[0], job
