"""A job's why leads with its queue's pause, as the queue's why does (tests/engine/test_paused_queue_why.py):
while the pause holds no worker claims the job, whatever else is true of it, so the pause is what an
on-call must read first; the job's other causes follow in their own order, and the summary (the
causes' texts joined, what `jobsctl show` prints on its why line) begins with it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from engine.introspect.why import job_causes
from engine.projections import JobSummary, QueuePause
from engine.projections_why import WhyReport
from engine.types import JobRow, JobState
from tests.engine.test_why import NOW, row

PAUSE = QueuePause("reports", True, by="ops", at=NOW - timedelta(minutes=5), note="INC-12")
WAITS: dict[str, Any] = {"kind": "event", "step": "approved", "event": "invoice.paid", "match": {}, "timeout_at": None}


@pytest.mark.parametrize(
    ("job", "first_own"),
    [
        pytest.param(row(JobState.DELAYED, run_at=NOW + timedelta(minutes=2)), "delayed", id="delayed"),
        pytest.param(
            row(JobState.PARKED, wait={"kind": "limit", "limit": "rate", "key": "tenant:acme"}), "limit", id="parked"
        ),
        pytest.param(row(JobState.SUSPENDED, wait=WAITS), "event", id="suspended"),
    ],
)
def test_a_waiting_jobs_why_leads_with_its_queues_pause_then_says_its_own_causes(job: JobRow, first_own: str) -> None:
    causes = job_causes(job, now=NOW, pause=PAUSE, workers=None, stale_after=30, duplicate=None)
    kinds = [c.kind for c in causes]
    assert kinds[0] == "paused", kinds
    assert kinds[1] == first_own, kinds
    assert kinds.count("paused") == 1
    report = WhyReport("job", job.id, job.state, tuple(causes), NOW)
    assert report.summary.startswith("Queue reports is paused by ops since "), report.summary


def test_a_duplicate_key_holder_is_said_after_the_pause_too() -> None:
    job = row(JobState.DELAYED, run_at=NOW + timedelta(minutes=2))
    other = JobSummary.of(row(JobState.READY, id="019b796d-d600-7027-a9b3-b30678e51062"))
    causes = job_causes(job, now=NOW, pause=PAUSE, workers=None, stale_after=30, duplicate=other)
    assert [c.kind for c in causes] == ["paused", "delayed", "duplicate"]


def test_a_ready_job_in_a_paused_queue_says_the_pause_alone_not_that_it_is_next() -> None:
    causes = job_causes(row(JobState.READY), now=NOW, pause=PAUSE, workers=None, stale_after=30, duplicate=None)
    assert [c.kind for c in causes] == ["paused"]
