"""$JOBS_TEST_CLOCK_SKEW (tests only) moves a `jobsctl worker` process's wall clock, never its
monotonic clock: how the torture run gives its workers clocks that disagree within the margin
README.md states. A value that is not a number is refused before the database is touched."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from typer.testing import CliRunner

from engine.cli import app
from engine.clock import SKEW_ENV, SkewedClock, SystemClock, process_clock
from engine.errors import X_INVALID_ARGUMENT, JobsError

NOWHERE = "host=/nonexistent-socket-dir dbname=nothing user=nobody"


def test_without_the_variable_a_process_runs_on_the_system_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SKEW_ENV, raising=False)
    clock = process_clock()
    assert type(clock) is SystemClock and clock.skew == 0
    monkeypatch.setenv(SKEW_ENV, "0")
    assert type(process_clock()) is SystemClock


def test_the_variable_moves_now_and_leaves_the_monotonic_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SKEW_ENV, "-2.5")
    clock = process_clock()
    assert isinstance(clock, SkewedClock) and clock.skew == -2.5
    before = datetime.now(UTC)
    moved = clock.now()
    after = datetime.now(UTC)
    # now() is read between `before` and `after`, then moved: exact bounds, whatever the machine's load
    assert before - timedelta(seconds=2.5) <= moved <= after - timedelta(seconds=2.5)
    assert moved.tzinfo is UTC
    mono = SystemClock().monotonic()
    assert abs(clock.monotonic() - mono) < 1  # lease bookkeeping keeps real durations


@pytest.mark.parametrize("raw", ["soon", "nan", "inf", "1s"])
def test_a_value_that_is_not_seconds_is_refused(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv(SKEW_ENV, raw)
    with pytest.raises(JobsError) as err:
        process_clock()
    assert err.value.code == X_INVALID_ARGUMENT and SKEW_ENV in err.value.cause and "tests only" in err.value.cause
    assert err.value.fix == f"unset {SKEW_ENV}"


def test_jobs_worker_refuses_a_bad_skew_before_the_database(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SKEW_ENV, "soon")
    result = CliRunner().invoke(app, ["worker", "tests.engine.test_worker_app", "--dsn", NOWHERE])
    assert result.exit_code != 0
    assert f"error {X_INVALID_ARGUMENT}:" in result.stderr and SKEW_ENV in result.stderr
    assert "X_DB_UNREACHABLE" not in result.stderr
