"""`jobsctl backfill NAME --wait` exits with how the pass ended, on the codes every wait uses
(README, "Exit codes"): 0 completed; 6 failed, stalled or cancelled; 7 still live past --timeout
(the pass goes on); 130 when the person following it interrupts (the pass goes on, and the line
says how to follow it again); 1 stays an error of the command itself."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from engine.api import connect
from engine.backfills import BackfillControl
from engine.cli import app
from engine.cli.backfill import _follow, load_catalog
from engine.clock import FakeClock
from engine.errors import JobsError
from engine.testing import Factory, PassPlayer
from tests.engine import backfill_app

APP = "tests.engine.backfill_app"
NAME = "accounts_email_lower"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def app_dsn(pg_dsn: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("BACKFILL_APP_DSN", pg_dsn)
    monkeypatch.delenv("JOBS_ENV", raising=False)
    backfill_app.create_accounts(pg_dsn, 100)
    return pg_dsn


def _played(dsn: str, play: Any) -> str:
    """``play(control, factory)`` on an engine over ``dsn`` (a FakeClock: backoffs are skipped);
    answers the pass's job id."""

    async def go() -> str:
        eng = connect(dsn, clock=FakeClock(datetime.now(UTC)), environment="development")
        try:
            ctl = BackfillControl(eng, backfill_app.bf, actor="ci", environment="development")
            return str(await play(ctl, Factory.of(eng)))
        finally:
            await eng.aclose()

    return asyncio.run(go())


def _follow_exit(dsn: str, name: str, job_id: str) -> int:
    return _follow(load_catalog(APP), name, job_id, dsn, None, False)


def test_wait_exits_0_once_the_pass_completed(app_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    async def play(ctl: BackfillControl, f: Factory) -> str:
        p = await PassPlayer.start(f, ctl, NAME, write=True)
        assert await p.finish() == "completed"
        return p.started.job_id

    assert _follow_exit(app_dsn, NAME, _played(app_dsn, play)) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"{NAME}: completed"


def test_wait_exits_6_when_the_pass_failed_for_good(app_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    async def play(ctl: BackfillControl, f: Factory) -> str:
        p = await PassPlayer.start(f, ctl, NAME, write=True)
        await p.batches(0)
        await p.fail(JobsError("X_LOCK_TIMEOUT", cause="lock timeout", fix="retry"), attempts=3)  # dead at 3 of 3
        return p.started.job_id

    assert _follow_exit(app_dsn, NAME, _played(app_dsn, play)) == 6
    said = capsys.readouterr().out.splitlines()[-1]
    assert said.startswith(f"{NAME}: failed") and "X_LOCK_TIMEOUT" in said


def test_wait_exits_6_when_the_pass_stalled(app_dsn: str) -> None:
    async def play(ctl: BackfillControl, f: Factory) -> str:
        p = await PassPlayer.start(f, ctl, "accounts_even_only", write=True)
        assert await p.finish() == "stalled"
        return p.started.job_id

    assert _follow_exit(app_dsn, "accounts_even_only", _played(app_dsn, play)) == 6


def test_wait_exits_6_when_the_pass_was_cancelled(app_dsn: str) -> None:
    async def play(ctl: BackfillControl, f: Factory) -> str:
        started = await ctl.start(NAME, write=True)
        assert (await ctl.cancel(NAME)).changed
        return started.job_id

    assert _follow_exit(app_dsn, NAME, _played(app_dsn, play)) == 6


def test_wait_exits_7_past_its_timeout_and_the_pass_goes_on(app_dsn: str) -> None:
    """No worker serves the pass: --wait gives up at --timeout and says the pass is still queued."""
    r = CliRunner().invoke(
        app, ["backfill", NAME, "--app", APP, "--dsn", app_dsn, "--write", "--wait", "--timeout", "300ms", "--json"]
    )
    assert r.exit_code == 7, r.output
    said = json.loads(r.stdout)
    assert said["job"]["state"] == "ready" and said["error"]["code"] == "X_WAIT_TIMEOUT"
    assert said["error"]["fix"] == f"jobsctl wait {said['job']['id']}"
    r = CliRunner().invoke(app, ["backfill", "--status", "--app", APP, "--dsn", app_dsn, "--json"])
    assert r.exit_code == 0, r.output
    assert {v["name"]: v["status"] for v in json.loads(r.stdout)}[NAME] == "running"
    r = CliRunner().invoke(
        app, ["backfill", "accounts_even_only", "--app", APP, "--dsn", app_dsn, "--write", "--wait", "--timeout", "0s"]
    )
    assert r.exit_code == 7, r.output
    job_id = r.stdout.split()[0]
    assert "error X_WAIT_TIMEOUT" in r.stderr and f"fix: jobsctl wait {job_id}" in r.stderr, r.stderr


@pytest.mark.parametrize(
    ("flags", "fix"),
    [
        (["--timeout", "5m"], f"jobsctl backfill {NAME} --wait --timeout 5m"),  # a dry run stays one
        (["--write", "--timeout", "5m"], f"jobsctl backfill {NAME} --write --wait --timeout 5m"),
        (["--retry", "--timeout", "5m"], f"jobsctl backfill {NAME} --retry --wait --timeout 5m"),
        (["--cancel", "--timeout", "5m"], f"jobsctl backfill {NAME} --cancel"),
    ],
)
def test_a_timeout_without_wait_is_refused_as_doing_nothing(flags: list[str], fix: str) -> None:
    r = CliRunner().invoke(
        app, ["backfill", NAME, "--app", APP, "--dsn", "postgresql://nobody@127.0.0.1:1/nowhere", *flags]
    )
    assert r.exit_code == 1 and "error X_INVALID_ARGUMENT" in r.stderr, r.stderr
    assert "--timeout bounds --wait" in r.stderr and f"fix: {fix}\n" in r.stderr, r.stderr
    assert "X_DB_UNREACHABLE" not in r.stderr


def test_an_interrupted_wait_exits_130_and_says_the_pass_goes_on(app_dsn: str) -> None:
    env = {**os.environ, "BACKFILL_APP_DSN": app_dsn, "NO_COLOR": "1"}
    env.pop("JOBS_ENV", None)
    cmd = [sys.executable, "-c", "from engine.cli import main; main()", "backfill", NAME, "--app", APP]
    proc = subprocess.Popen(
        [*cmd, "--dsn", app_dsn, "--wait"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the pass is enqueued: the follow has begun
        assert "dry run pass of accounts_email_lower enqueued" in line, line
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    job_id = line.split()[0]
    assert proc.returncode == 130, (out, err)
    assert f"stopped following {NAME}; its pass {job_id} goes on" in err and f"fix: jobsctl wait {job_id}" in err
    assert "Aborted!" not in err and "Traceback" not in err
