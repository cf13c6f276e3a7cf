"""The worker's claim floors (engine/runtime/floors.py): each claim reads a queue from the latest
run_at its claims took, a full claim from the head runs at least every FULL_EVERY seconds (and at
most every FULL_SHARE times its own duration), and again at once while it finds rows due before
a floor, so no row is left behind by the floors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from engine.runtime.floors import FULL_EVERY, FULL_SHARE, SLACK, ClaimFloors
from engine.types import ClaimedJob, JobRow, JobState

T0 = datetime(2026, 12, 4, 12, tzinfo=UTC)


def _claimed(queue: str, seconds: float) -> ClaimedJob:
    at = T0 + timedelta(seconds=seconds)
    row = JobRow(
        id=f"{queue}{seconds}", name="j", queue=queue, tenant=None, idempotency_key="k", input={}, result=None,
        state=JobState.RUNNING, priority=0, attempt=1, max_attempts=3, run=1, run_at=at, created_at=at,
        updated_at=at, claimed_by="w", claimed_at=at, lease_until=None, finished_at=None, last_error=None,
        error_code=None, stop_reason=None, wait=None, waiting_since=None,
    )  # fmt: skip
    return ClaimedJob(row)


def test_the_first_claim_is_full_and_the_next_reads_each_queue_from_a_second_before_its_latest_claimed_run_at() -> None:
    f = ClaimFloors()
    assert f.after(0.0) is None
    f.claimed([_claimed("a", 1), _claimed("a", 3), _claimed("b", 2)], after=None, started=0.0, now=0.01)
    assert f.after(0.02) == {"a": T0 + timedelta(seconds=3) - SLACK, "b": T0 + timedelta(seconds=2) - SLACK}
    f.claimed([_claimed("a", 7)], after=f.after(0.03), started=0.03, now=0.04)
    assert f.after(0.05) == {"a": T0 + timedelta(seconds=7) - SLACK, "b": T0 + timedelta(seconds=2) - SLACK}


def test_a_job_committed_just_after_a_later_one_was_claimed_is_still_above_the_floor() -> None:
    # Two producers: one stamps run_at T0+4.9 and commits after a job stamped T0+5 was claimed.
    f = ClaimFloors()
    f.claimed([_claimed("a", 5)], after=None, started=0.0, now=0.0)
    floors = f.after(0.1)
    assert floors is not None and floors["a"] <= T0 + timedelta(seconds=4.9)


def test_a_full_claim_comes_every_full_every_seconds_or_every_full_share_times_its_duration() -> None:
    f = ClaimFloors()
    f.claimed([_claimed("a", 1)], after=None, started=10.0, now=10.001)
    assert f.after(10.0 + FULL_EVERY - 0.01) is not None
    assert f.after(10.001 + FULL_EVERY) is None
    slow = 0.5  # a full claim that took half a second (a long snapshot's leftovers to step over)
    f.claimed([_claimed("a", 2)], after=None, started=20.0, now=20.0 + slow)
    assert f.after(20.0 + slow + FULL_SHARE * slow - 0.01) is not None
    assert f.after(20.0 + slow + FULL_SHARE * slow) is None


def test_a_full_claim_that_finds_a_row_below_a_floor_is_followed_by_another_at_once() -> None:
    f = ClaimFloors()
    f.claimed([_claimed("a", 5)], after=None, started=0.0, now=0.0)
    # A full claim takes a row due before the floor (a released job keeps its place): more may
    # wait there, so the next claim is full too, until one finds none.
    f.claimed([_claimed("a", 2), _claimed("a", 6)], after=None, started=2.0, now=2.0)  # 2 < 5 - SLACK
    assert f.after(2.0) is None
    f.claimed([_claimed("a", 8)], after=None, started=2.0, now=2.0)
    assert f.after(2.0) is not None


def test_a_row_falling_due_before_a_floor_makes_the_claim_at_its_due_time_a_full_one() -> None:
    f = ClaimFloors()
    f.claimed([_claimed("a", 5)], after=None, started=0.0, now=0.0)
    assert f.after(0.1) is not None
    # A delayed row due at T0+3.5 (before the floor at T0+5-SLACK), said at wall T0+3.2, monotonic 0.2.
    f.due(T0 + timedelta(seconds=3.5), wall=T0 + timedelta(seconds=3.2), now=0.2)
    assert f.after(0.49) is not None
    assert f.after(0.5) is None
    # One due after every floor leaves the floors on.
    g = ClaimFloors()
    g.claimed([_claimed("a", 5)], after=None, started=0.0, now=0.0)
    g.due(T0 + timedelta(seconds=6), wall=T0 + timedelta(seconds=4.2), now=0.2)
    assert g.after(0.5) is not None and g.after(FULL_EVERY) is None
