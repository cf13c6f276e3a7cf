"""I22's applied gate guards writing only: once a write pass completed in an environment, a second
write there is refused as X_BACKFILL_APPLIED (a forced one writes a NEW ledger row), while a dry
run, which writes nothing, is never refused as applied: an operator can always look at what a
rerun would sweep."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from engine.api import Engine
from engine.backfills import BackfillControl, Backfills, Batch
from engine.drivers.memory import MemoryDriver
from engine.errors import JobsError
from engine.services.maintenance import maintained_worker


async def _run_to_the_end(eng: Engine, bf: Backfills, job_id: str) -> None:
    done = asyncio.Event()

    def seen(ex: Any) -> None:
        if ex.job_id == job_id and ex.outcome == "completed":
            done.set()

    async with maintained_worker(eng.driver, list(bf), poll_interval=0.05, on_execution=seen):
        await asyncio.wait_for(done.wait(), 10)  # a safety net, never the expected path


async def test_i22_a_dry_run_of_an_applied_backfill_starts_and_a_write_needs_force() -> None:
    data = {n: False for n in range(1, 6)}
    bf = Backfills(version="1")

    def read(conn: Any, after: Any, size: int) -> tuple[list[Any], Any]:
        keys = [k for k in sorted(data) if (after is None or k > after) and not data[k]][:size]
        return keys, keys[-1] if keys else after

    @bf.backfill("flags", source=read, count=lambda conn: sum(not v for v in data.values()), batch_size=10)
    def flags(batch: Batch) -> None:
        for k in batch.rows:
            data[k] = True

    eng = Engine(MemoryDriver())
    ctl = BackfillControl(eng, bf, actor="alice", environment="test")
    first = await ctl.start("flags", write=True)
    await _run_to_the_end(eng, bf, first.job_id)
    assert await ctl.pending() == []
    gate = await ctl.gate("flags", write=False)
    assert gate is None, gate  # a dry run writes nothing: never refused as applied
    dry = await ctl.start("flags", write=False)
    assert dry.dry_run and not dry.forced
    await _run_to_the_end(eng, bf, dry.job_id)
    with pytest.raises(JobsError) as err:
        await ctl.start("flags", write=True)
    assert err.value.code == "X_BACKFILL_APPLIED"
    forced = await ctl.start("flags", write=True, force=True)
    await _run_to_the_end(eng, bf, forced.job_id)
    runs = await ctl.history("flags")
    assert [(r.dry_run, r.forced, r.status) for r in runs] == [
        (False, True, "completed"),
        (True, False, "completed"),
        (False, False, "completed"),
    ]
    assert len({r.id for r in runs}) == 3  # the forced rerun wrote a new ledger row
    eng.close()
