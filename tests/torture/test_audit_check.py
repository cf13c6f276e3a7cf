"""The torture run's audit log check on evidence written by hand: each operator change to a job is
one audit log entry and each entry one change; a change without its entry, an entry without its
change, or a run with no change at all fails it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bench.torture.checks import Evidence
from bench.torture.checks_fanins import audited

CANCEL = {"target": "j1", "action": "job.cancel"}
RETRY = {"target": "j2", "action": "job.retry"}


def _evidence(changes: list[dict[str, Any]], audit: list[dict[str, Any]]) -> Evidence:
    return Evidence(
        jobs=[], executions=[], steps=[], attempts=[], outbox=[], orders=set(), schedule=[], direct_counts={},
        projected={}, sent={}, now=datetime(2026, 12, 8, tzinfo=UTC), operator_changes=changes, audit=audit,
    )  # fmt: skip


def test_each_operator_change_with_its_one_entry_passes() -> None:
    check = audited(_evidence([CANCEL, RETRY, RETRY], [RETRY, CANCEL, RETRY]))
    assert check.ok, check.problems
    assert check.detail.startswith("3 changes (1 job.cancel, 2 job.retry)")


def test_a_change_without_its_entry_an_entry_without_its_change_or_no_change_fails() -> None:
    for changes, audit in (
        ([CANCEL, RETRY], [CANCEL]),
        ([CANCEL], [CANCEL, RETRY]),
        ([RETRY, RETRY], [RETRY]),
        ([], []),
    ):
        assert not audited(_evidence(changes, audit)).ok, (changes, audit)
