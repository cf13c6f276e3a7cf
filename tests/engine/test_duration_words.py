"""A span is said one way wherever it is shown (engine.durations.duration: its two largest units):
a why's "in 2d23h" is what the job's detail and the tables say, never "in 71h"."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from engine.durations import duration, relative
from engine.introspect.why import job_causes, worker_causes
from engine.introspect.why_queue import queue_causes
from engine.records import WorkerRecord
from engine.types import JobState
from tests.engine.test_why import NOW, queue, row

SPAN = timedelta(days=2, hours=23, minutes=59)


def test_a_span_from_now_is_said_as_duration_says_it_ahead_and_behind() -> None:
    assert relative(SPAN.total_seconds()) == f"in {duration(SPAN.total_seconds())}" == "in 2d23h"
    assert relative(-90) == "1m30s ago"
    assert (relative(0.4), relative(-0.4)) == ("in under a second", "under a second ago")


def test_an_age_of_zero_negated_is_said_behind_now_as_a_fresh_heartbeat_is() -> None:
    age = 0.0  # a heartbeat read the instant it was sent
    assert relative(-age) == "under a second ago"
    assert relative(0.0) == "in under a second"  # a moment due now is still ahead


def test_a_delayed_jobs_why_says_its_wait_in_days_and_hours_as_its_detail_does() -> None:
    delayed = row(JobState.DELAYED, run_at=NOW + SPAN)
    (cause,) = job_causes(delayed, now=NOW, pause=None, workers=None, stale_after=30, duplicate=None)
    assert cause.text == "Delayed until 2026-01-04 11:59:00 UTC (in 2d23h)."
    assert "71h" not in cause.text


def test_a_stale_heartbeat_and_a_queues_oldest_wait_are_said_as_durations() -> None:
    stale = WorkerRecord(
        id="w1", host="h1", pid=1, queues=("billing",), concurrency=4, in_use=0, started_at=NOW - SPAN,
        heartbeat_at=NOW - timedelta(seconds=95), stopping=False, heartbeat_age=95.0,
    )  # fmt: skip
    (said, _) = worker_causes("billing", [stale], stale_after=30)
    assert said.text.endswith("its last heartbeat was 1m35s ago.")
    q = replace(queue(ready=3), oldest_ready_age=3 * 3600 + 5 * 60.0)
    (ready,) = queue_causes(q, workers=None, stale_after=30, now=NOW)
    assert "the oldest for 3h05m" in ready.text
