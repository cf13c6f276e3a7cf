"""Backfills on real PostgreSQL over a real application table (I22): a write pass sweeps every row
once, a dry run writes nothing, a SIGKILLed `jobsctl worker` mid-pass resumes at its batch on another
worker, each gate fires with its code and leaves the ledger as it was, a stalled pass is caught,
cancel stops within one batch and retry continues from there. Waits are on the workers'
execution callbacks, on a process's stdout, or on a batch hook; none sleeps for a condition."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from engine.api import Engine
from engine.backfills import BackfillControl
from engine.drivers.postgres import PostgresDriver
from engine.errors import JobsError
from engine.runtime.execute import Execution
from engine.services.maintenance import MaintenanceConfig, maintained_worker
from engine.types import JobState
from tests.engine import backfill_app as app

ROOT = Path(__file__).resolve().parents[2]
ROWS = 50_000


@pytest.fixture
async def world(pg_dsn: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[Engine, BackfillControl]]:
    monkeypatch.setenv("BACKFILL_APP_DSN", pg_dsn)
    monkeypatch.delenv("JOBS_ENV", raising=False)
    app.create_accounts(pg_dsn, ROWS)
    eng = Engine(PostgresDriver(pg_dsn))
    try:
        yield eng, BackfillControl(eng, app, actor="alice")
    finally:
        app.ON_BATCH.clear()
        await eng.aclose()


def _table(dsn: str) -> tuple[int, int, int, int]:
    """(rows, rows swept, rows updated more than once, rows never updated)."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "select count(*), count(*) filter (where email_lower = lower(email)), count(*) filter (where hits > 1),"
            " count(*) filter (where hits = 0) from accounts"
        ).fetchone()
    assert row is not None
    return row  # type: ignore[return-value]


class Finished:
    def __init__(self) -> None:
        self.outcomes: dict[str, list[str]] = {}
        self.changed = asyncio.Event()

    def __call__(self, ex: Execution) -> None:
        self.outcomes.setdefault(ex.job_id, []).append(ex.outcome)
        self.changed.set()

    async def until(self, job_id: str, *outcomes: str) -> str:
        async def wait() -> str:
            while True:
                seen = [o for o in self.outcomes.get(job_id, []) if o in outcomes]
                if seen:
                    return seen[-1]
                self.changed.clear()
                await self.changed.wait()

        return await asyncio.wait_for(wait(), 60)


def _worker(dsn: str, seen: Finished, **kw: Any) -> Any:
    return maintained_worker(
        PostgresDriver(dsn),
        app,
        poll_interval=0.2,
        on_execution=seen,
        maintenance_config=MaintenanceConfig(interval=0.2, leader_lease=2.0),
        **kw,
    )


async def _ledger(eng: Engine) -> list[Any]:
    return await eng.driver.backfill_runs(names=None, environment=None, limit=1000)


async def test_i22_a_write_pass_sweeps_every_row_exactly_once(world: Any, pg_dsn: str) -> None:
    eng, ctl = world
    started = await ctl.start("accounts_email_lower", write=True)
    seen = Finished()
    async with _worker(pg_dsn, seen):
        assert await seen.until(started.job_id, "completed", "dead") == "completed"
    assert _table(pg_dsn) == (ROWS, ROWS, 0, 0)
    [run] = await ctl.history("accounts_email_lower")
    assert (run.status, run.dry_run, run.swept, run.batches, run.planned) == ("completed", False, ROWS, 50, ROWS)
    assert (run.actor, run.app_version, run.environment, run.job_id) == (
        "alice",
        "1.4.2",
        "development",
        started.job_id,
    )
    assert "accounts_email_lower" not in [d.backfill for d in await ctl.pending()]
    [view] = [v for v in await ctl.views() if v.name == "accounts_email_lower"]
    assert view.status == "completed" and view.gate is not None and view.gate.code == "X_BACKFILL_APPLIED"


async def test_i22_a_dry_run_counts_and_reads_and_writes_nothing(world: Any, pg_dsn: str) -> None:
    eng, ctl = world
    started = await ctl.start("accounts_email_lower")  # dry run by default
    seen = Finished()
    async with _worker(pg_dsn, seen):
        assert await seen.until(started.job_id, "completed", "dead") == "completed"
    assert _table(pg_dsn) == (ROWS, 0, 0, ROWS)
    [run] = await ctl.history("accounts_email_lower")
    assert (run.status, run.dry_run, run.swept, run.batches) == ("completed", True, ROWS, 50)
    assert "accounts_email_lower" in [d.backfill for d in await ctl.pending()]  # a dry run applies nothing


async def test_i22_each_gate_fires_with_its_code_and_leaves_the_ledger_as_it_was(world: Any, pg_dsn: str) -> None:
    eng, ctl = world

    async def refused(code: str, call: Any) -> JobsError:
        before = await _ledger(eng)
        with pytest.raises(JobsError) as info:
            await call
        assert info.value.code == code
        assert await _ledger(eng) == before
        return info.value

    err = await refused("X_BACKFILL_UNKNOWN", ctl.start("accounts_emial_lower", write=True))
    assert "did you mean 'accounts_email_lower'" in err.cause and "accounts_even_only" in err.cause
    err = await refused("X_BACKFILL_PENDING", ctl.require_applied())
    assert err.fix == "jobsctl backfill accounts_email_lower --app tests.engine.backfill_app --write"
    err = await refused("X_BACKFILL_ENVIRONMENT", ctl.start("accounts_prod_only", write=True))
    assert err.fix == "JOBS_ENV=production jobsctl backfill accounts_prod_only --app tests.engine.backfill_app --write"
    err = await refused("X_BACKFILL_MIGRATION_PENDING", ctl.start("accounts_future", write=True))
    assert "0003_not_yet" in err.cause
    first = await ctl.start("accounts_email_lower", write=True)  # queued: no worker yet
    err = await refused("X_BACKFILL_RUNNING", ctl.start("accounts_email_lower", write=True))
    assert first.job_id not in err.cause and err.fix == f"jobsctl show {first.job_id}"  # the id, said once
    seen = Finished()
    async with _worker(pg_dsn, seen):
        assert await seen.until(first.job_id, "completed", "dead") == "completed"
    err = await refused("X_BACKFILL_APPLIED", ctl.start("accounts_email_lower", write=True))
    assert err.fix.endswith("--write --force")
    [done] = await ctl.history("accounts_email_lower")
    forced = await ctl.start("accounts_email_lower", write=True, force=True)  # a NEW row; the completed one stays
    runs = await ctl.history("accounts_email_lower")
    assert [r.id for r in runs] == [forced.run_id, done.id] and runs[1] == done and runs[0].forced


async def test_i22_stalled_catches_a_source_that_disagrees_with_count(world: Any, pg_dsn: str) -> None:
    eng, ctl = world
    started = await ctl.start("accounts_even_only", write=True)
    seen = Finished()
    async with _worker(pg_dsn, seen):
        assert await seen.until(started.job_id, "completed", "dead") == "dead"  # terminal: a rerun cannot mend it
    row = await eng.aget(started.job_id)
    assert row.attempt == 1 and row.last_error is not None and row.last_error.startswith("X_BACKFILL_STALLED")
    [run] = await ctl.history("accounts_even_only")
    assert (run.status, run.swept) == ("stalled", ROWS // 2) and "still matches 25000" in (run.error or "")
    assert "accounts_even_only" in [d.backfill for d in await ctl.pending()]
    [view] = [v for v in await ctl.views() if v.name == "accounts_even_only"]
    assert view.status == "stalled"


async def test_i22_cancel_mid_pass_stops_within_one_batch_and_retry_continues_from_there(
    world: Any, pg_dsn: str
) -> None:
    eng, ctl = world
    reached, release = threading.Event(), threading.Event()

    def hold_at_five(batch: Any) -> None:
        if batch.number == 5 and not release.is_set():
            reached.set()
            release.wait(30)

    app.ON_BATCH.append(hold_at_five)
    started = await ctl.start("accounts_email_lower", write=True)
    seen = Finished()
    async with _worker(pg_dsn, seen):
        assert await asyncio.to_thread(reached.wait, 30)
        res = await ctl.cancel("accounts_email_lower", note="incident 7")
        release.set()
        assert (
            res.changed
            and await seen.until(started.job_id, "cancelled", "completed", "dead", "retried", "lost", "settle-failed")
            == "cancelled"
        )
        [run] = await ctl.history("accounts_email_lower")
        assert (run.status, run.batches, run.swept, run.error) == ("cancelled", 4, 4000, "cancelled by alice")
        # The batch the cancel overtook was rolled back; none started after it.
        assert _table(pg_dsn) == (ROWS, 4000, 0, ROWS - 4000)
        steps = [s.name for s in await eng.driver.step_list(job_id=started.job_id)]
        assert steps == ["plan", "batch-1", "batch-2", "batch-3", "batch-4"]  # batch 5's write was refused
        again = await ctl.retry("accounts_email_lower")
        assert again.changed and again.job_id == started.job_id
        assert await seen.until(started.job_id, "completed", "dead") == "completed"
    assert _table(pg_dsn) == (ROWS, ROWS, 0, 0)
    [run] = await ctl.history("accounts_email_lower")
    assert (run.status, run.swept) == ("completed", ROWS)
    history = await eng.driver.job_history(job_id=started.job_id)
    assert [(h.kind, h.actor) for h in history if h.kind in ("cancelled", "retried")] == [
        ("cancelled", "alice"),
        ("retried", "alice"),
    ]
    steps = await eng.driver.step_list(job_id=started.job_id)
    assert [s.name for s in steps if s.name.startswith("batch-")] == [f"batch-{n}" for n in range(1, 52)]


async def test_i22_a_sigkilled_worker_resumes_at_its_batch_on_another_worker(world: Any, pg_dsn: str) -> None:
    eng, ctl = world
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "BACKFILL_APP_DSN": pg_dsn,
        "BACKFILL_ANNOUNCE": "1",
        "BACKFILL_HOLD_AT": "10",
        "BACKFILL_RATE": "25",
    }
    cmd = [
        sys.executable,
        "-c",
        "from engine.cli import main; main()",
        "worker",
        "tests.engine.backfill_app",
        "--dsn",
        pg_dsn,
        "--lease-seconds",
        "1",
        "--no-maintenance",
        "--concurrency",
        "1",
    ]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        started = await ctl.start("accounts_email_lower", write=True)
        assert proc.stdout is not None
        while True:
            line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 30)
            assert line, "the worker exited mid-pass"
            if line.strip() == "BATCH 10":
                break
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        killed_at = {s.name for s in await eng.driver.step_load(job_id=started.job_id)}
        seen = Finished()
        async with _worker(pg_dsn, seen, lease_seconds=1.0):
            assert await seen.until(started.job_id, "completed", "dead") == "completed"
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _table(pg_dsn) == (ROWS, ROWS, 0, 0)  # every row updated, each exactly once
    steps = await eng.driver.step_load(job_id=started.job_id)
    batches = [s for s in steps if s.name.startswith("batch-")]
    assert [s.name for s in batches] == [f"batch-{n}" for n in range(1, 52)]
    # Killed inside batch 10, after its write and before its commit: that write was rolled back
    # with the dead worker's connection and batch 10 ran again, on the next holder.
    assert killed_at == {"plan", *(f"batch-{n}" for n in range(1, 10))}
    assert [s.run for s in batches] == [1] * 9 + [2] * 42
    atts = await eng.driver.job_attempts(job_id=started.job_id)
    assert [a.outcome for a in atts] == ["lost", "completed"]
    row = await eng.aget(started.job_id)
    assert row.state is JobState.COMPLETED
    [run] = await ctl.history("accounts_email_lower")
    assert (run.status, run.swept, run.batches) == ("completed", ROWS, 50)
