"""I22's stalled gate on a dry run: a dry run writes nothing, so count() still matches every row
after it; it is stalled when its source ran out having read FEWER rows than count() says match
(the source and the count disagree, and a write pass would stall the same way). A dry run whose
source reads every row count() matches completes. Both on a real worker (run_pass)."""

from __future__ import annotations

import asyncio
from typing import Any

from engine.api import Engine
from engine.backfills import BackfillControl, Backfills, Batch
from engine.drivers.memory import MemoryDriver
from engine.services.maintenance import maintained_worker


def _app(readable: int, counted: int) -> Backfills:
    bf = Backfills(version="1")
    keys = list(range(1, readable + 1))

    def read(conn: Any, after: Any, size: int) -> tuple[list[Any], Any]:
        got = [k for k in keys if after is None or k > after][:size]
        return got, got[-1] if got else after

    @bf.backfill("flags", source=read, count=lambda conn: counted, batch_size=2)
    def flags(batch: Batch) -> None: ...

    return bf


async def _dry_run(bf: Backfills) -> tuple[str, Any]:
    """A dry run of ``flags`` on a real worker (run_pass): the job's outcome and its ledger row."""
    eng = Engine(MemoryDriver(), environment="production")
    control = BackfillControl(eng, bf, actor="alice")
    started = await control.start("flags", write=False)
    ended: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def seen(ex: Any) -> None:
        if ex.job_id == started.job_id and ex.outcome in ("completed", "dead") and not ended.done():
            ended.set_result(ex.outcome)

    async with maintained_worker(eng.driver, list(bf), poll_interval=0.05, on_execution=seen):
        end = await asyncio.wait_for(ended, 10)  # a safety net, never the expected path
    [run] = await control.history("flags")
    eng.close()
    return end, run


async def test_i22_a_dry_run_whose_source_reads_fewer_rows_than_count_is_stalled() -> None:
    end, run = await _dry_run(_app(readable=3, counted=5))
    assert end == "dead"  # terminal: running it again cannot mend the source
    assert run.dry_run and run.status == "stalled" and (run.error or "").startswith("X_BACKFILL_STALLED")


async def test_i22_a_dry_run_whose_source_reads_every_counted_row_completes() -> None:
    end, run = await _dry_run(_app(readable=5, counted=5))
    assert end == "completed"
    assert (run.dry_run, run.status, run.swept, run.error) == (True, "completed", 5, None)
