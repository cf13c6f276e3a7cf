"""The CI-size torture run, once per session for every test of tests/torture (bench/torture):
3 real `jobsctl worker` processes on a private PostgreSQL, a steady mix of every kind of job for 50 s
while every kind of fault is injected, then the checks. Each test asserts one of its invariants;
the speeds it measures are reported, never asserted. The suite's processes take a file each, and
each process that reaches the fixture runs the whole run: every test reading it lives in
test_torture.py."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.torture.run import TortureConfig, TortureReport, run_torture

CI = TortureConfig(seconds=50.0, rate=20.0, workers=3, lease=3.0, skew=0.5, plan="storm", settle=90.0)


@pytest.fixture(scope="session")
def torture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TortureReport]:
    logs: Path = tmp_path_factory.mktemp("torture-logs")
    report = asyncio.run(run_torture(TortureConfig(**{**vars(CI), "logs": logs})))
    text = "\n".join(report.lines())
    (logs / "report.txt").write_text(text + "\n")
    print("\n" + text)
    yield report


def check(report: TortureReport, name: str) -> None:
    """Assert the run's check of that name held, with its problems as the message."""
    [c] = [c for c in report.checks if c.name == name]
    assert c.ok, f"{c.line()}\n" + "\n".join(c.problems[:20]) + f"\n(logs: {report.logs})"
