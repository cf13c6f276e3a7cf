"""BackfillControl's fixes are commands the CLI takes and that act where the refusal was read: a
retry of a completed pass points at the backfill's history (its name with --status is refused),
with --env when the control's environment is not the one the command resolves by default."""

from __future__ import annotations

import asyncio
import shlex
from typing import Any

import pytest

from engine.api import Engine
from engine.backfills import BackfillControl, Backfills, Batch
from engine.cli.backfill import _one_mode
from engine.drivers.memory import MemoryDriver
from engine.errors import X_INVALID_STATE, JobsError
from engine.services.maintenance import maintained_worker

BF = Backfills(version="1")
ROWS = {n: False for n in range(1, 6)}


def _read(conn: Any, after: Any, size: int) -> tuple[list[Any], Any]:
    keys = [k for k in sorted(ROWS) if (after is None or k > after) and not ROWS[k]][:size]
    return keys, keys[-1] if keys else after


@BF.backfill("fix_env_flags", source=_read, count=lambda conn: sum(not v for v in ROWS.values()))
def _flags(batch: Batch) -> None:
    for k in batch.rows:
        ROWS[k] = True


async def test_a_retry_of_a_completed_pass_points_at_its_history_in_its_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JOBS_ENV", "staging")
    eng = Engine(MemoryDriver())
    ctl = BackfillControl(eng, BF, actor="alice", environment="production")
    done = asyncio.Event()
    await ctl.start("fix_env_flags", write=True)
    async with maintained_worker(eng.driver, list(BF), poll_interval=0.05, on_execution=lambda ex: done.set()):
        await asyncio.wait_for(done.wait(), 10)
    [run] = await ctl.history("fix_env_flags")
    assert run.status == "completed"
    with pytest.raises(JobsError) as info:
        await ctl.retry("fix_env_flags")
    err = info.value
    assert err.code == X_INVALID_STATE
    assert err.fix == f"jobsctl backfill fix_env_flags --app {__name__} --history --env production"
    words = shlex.split(err.fix)[2:]  # as the CLI parses them: the name, then its flags
    _one_mode(
        words[0], "--pending" in words, "--status" in words, "--history" in words, False, False, False, False, False
    )
