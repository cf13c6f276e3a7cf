"""`jobsctl wait ID` and `jobsctl enqueue ... --wait` interrupted by the person waiting (Ctrl-C):
exit 130 with one line saying the job goes on and, as its fix, how to follow it again, as
`jobsctl backfill --wait` says of its pass; nothing about the job changes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from engine.cli import app
from tests.engine import test_worker_app as worker_app

ID = "0190aaaa-bbbb-7ccc-8ddd-eeeeffff0001"
OTHER = "0190aaaa-bbbb-7ccc-8ddd-eeeeffff0002"


@pytest.fixture
def interrupted(monkeypatch: pytest.MonkeyPatch) -> None:
    """The wait's first read is where Ctrl-C lands."""

    async def ctrl_c(*_: Any, **__: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr("engine.outcomes.await_outcomes", ctrl_c)


@pytest.mark.usefixtures("interrupted")
def test_an_interrupted_wait_exits_130_saying_the_job_goes_on_and_how_to_follow_it() -> None:
    r = CliRunner().invoke(app, ["wait", ID, "--dsn", "memory://"])
    assert r.exit_code == 130, (r.exit_code, r.stderr)
    assert r.stderr == f"stopped waiting for job {ID}; it goes on\n  fix: jobsctl wait {ID}\n"
    assert "Aborted!" not in r.stderr


@pytest.mark.usefixtures("interrupted")
def test_an_interrupted_wait_for_several_jobs_names_them_all_in_its_fix_as_json_when_asked() -> None:
    r = CliRunner().invoke(app, ["wait", ID, OTHER, "--dsn", "memory://", "--json"])
    assert r.exit_code == 130, (r.exit_code, r.stderr)
    said = json.loads(r.stderr)
    assert said == {"stopped": "stopped waiting for 2 jobs; they go on", "fix": f"jobsctl wait {ID} {OTHER}"}


@pytest.mark.usefixtures("interrupted")
def test_an_interrupted_enqueue_wait_exits_130_and_says_the_enqueued_job_goes_on(pg_dsn: str) -> None:
    args = ["enqueue", "w.pg_work", "--app", worker_app.__name__, "--input", '{"n": 1}', "--dsn", pg_dsn, "--wait"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 130, (r.exit_code, r.stderr)
    job_id = r.stdout.split()[0]  # "ID enqueued state=ready"
    assert " enqueued state=ready" in r.stdout, r.stdout
    assert r.stderr == f"stopped waiting for job {job_id}; it goes on\n  fix: jobsctl wait {job_id}\n"
    shown = CliRunner().invoke(app, ["show", job_id, "--dsn", pg_dsn, "--json"])
    assert json.loads(shown.stdout)["job"]["state"] == "ready"  # only the waiting stopped
