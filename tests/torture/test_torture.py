"""The torture run's invariants (tests/torture/conftest.py runs it once): nothing committed is
lost, nothing rolled back runs, nothing completes twice, a step's stored result is its one
execution, a fan-in goes on only once its children have settled and enqueued none twice, a fan-in
cancelled with its children leaves none running, one dead of its dead child and retried with its
children completes with them, the audit log holds each of those changes once, each cron
occurrence is enqueued
once, the console's counts are true, a stalled worker
acks nothing it lost, every worker recovers from every fault on its own, and (I25) no log line
shows the DSN's password or a job's input. The run is one session fixture: every test that reads
it lives in this one file, so the suite's processes (a file each) run it once, not once each."""

from __future__ import annotations

import pytest

from bench.torture.cluster import PASSWORD
from bench.torture.faults import KINDS
from bench.torture.load import MARKER
from bench.torture.run import TortureReport
from tests.torture.conftest import check

pytestmark = pytest.mark.timeout(420)  # the first test runs the whole run (about 1.5 min)


def test_every_committed_enqueue_reaches_its_end_or_legitimately_waits(torture: TortureReport) -> None:
    check(torture, "every committed enqueue settled")


def test_no_rolled_back_staging_ran(torture: TortureReport) -> None:
    check(torture, "no rolled-back staging ran")


def test_i15_every_completed_job_has_exactly_one_completion(torture: TortureReport) -> None:
    check(torture, "every completed job has exactly one completion")


def test_i9_every_stored_step_ran_once_per_successful_write(torture: TortureReport) -> None:
    check(torture, "every stored step ran once per successful write")


def test_every_fan_in_went_on_once_its_children_each_enqueued_once_had_settled(torture: TortureReport) -> None:
    check(torture, "every fan-in went on once its children, each enqueued once, had settled")


def test_a_fan_in_cancelled_with_its_children_left_nothing_below_it(torture: TortureReport) -> None:
    check(torture, "a fan-in cancelled with its children left nothing below it")


def test_a_fan_in_dead_of_its_dead_child_retried_with_its_children_completed_with_them(
    torture: TortureReport,
) -> None:
    check(torture, "a fan-in retried with its children completed with them")


def test_the_audit_log_holds_each_operator_change_once_under_the_faults(torture: TortureReport) -> None:
    check(torture, "the audit log holds each operator change once")


def test_i21_each_cron_occurrence_was_enqueued_once(torture: TortureReport) -> None:
    check(torture, "each cron occurrence was enqueued once")


def test_projections_counts_equal_a_direct_count(torture: TortureReport) -> None:
    check(torture, "projections' counts equal a direct count")


def test_i13_a_stalled_worker_acks_nothing_it_lost_and_notices_the_loss(torture: TortureReport) -> None:
    check(torture, "a stalled worker acks nothing it lost, and notices")


def test_every_worker_recovers_on_its_own_and_drains_cleanly(torture: TortureReport) -> None:
    check(torture, "every worker recovered on its own and drained cleanly")


def test_every_kind_of_fault_was_injected_and_measured(torture: TortureReport) -> None:
    counts = torture.fault_counts()
    assert all(counts[kind] >= 1 for kind in KINDS), counts
    assert counts["kill"] >= 5 and counts["backend"] >= 3, counts
    assert sorted(torture.skews) == [-0.5, 0.0, 0.5]  # two workers' clocks 1 s apart, the margin
    assert [r.kind for r in torture.recoveries] == [f.kind for f in torture.faults]  # reported, not asserted


def test_the_report_ends_with_the_checks_the_fault_counts_and_the_reruns(torture: TortureReport) -> None:
    lines = torture.lines()
    tail = lines[-len(torture.checks) - sum(len(c.problems[:8]) for c in torture.checks) :]
    assert [line for line in tail if line.startswith("[")] == [c.line() for c in torture.checks]
    before = lines[: len(lines) - len(tail)]
    assert before[-1].startswith("faults injected: kill ")
    assert before[-2].startswith("handler re-runs (at-least-once, expected): handler runs ")
    assert torture.reruns["handler runs"] >= torture.enqueued * 0.9


def test_i25_no_torture_log_shows_the_dsn_password_or_an_input(torture: TortureReport) -> None:
    check(torture, "no log shows the DSN's password or a job's input")
    texts = [p.read_text(errors="replace") for p in torture.logs.glob("worker-*.log")]
    assert len(texts) >= 3 + torture.fault_counts()["kill"]  # every incarnation's log was read
    assert any("jobs.worker.reconnecting" in t for t in texts)  # the faults were seen
    assert not any(PASSWORD in t or MARKER in t for t in texts)


def test_every_line_a_worker_logs_is_a_json_event(torture: TortureReport) -> None:
    assert torture.plain_lines == []
