"""engine.testing's PassPlayer plays a pass through the operations run_pass uses, so what it leaves
is a state a real worker takes over: a pass handed back mid-way, or one that failed and is retried,
is finished by a real worker that replays the played batches and reads on from their cursor, each
row swept exactly once."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from engine.api import Engine
from engine.backfills import BackfillControl, Backfills, Batch
from engine.drivers.memory import MemoryDriver
from engine.errors import JobsError
from engine.retry import RetryPolicy
from engine.services.maintenance import maintained_worker
from engine.testing import Factory, PassPlayer

ROWS = 95


def _app(attempts: int = 3) -> tuple[Backfills, dict[int, bool], Counter[int]]:
    table = {n: False for n in range(1, ROWS + 1)}
    handled: Counter[int] = Counter()
    bf = Backfills(version="1")

    def read(conn: Any, after: Any, size: int) -> tuple[list[Any], Any]:
        keys = [k for k in sorted(table) if (after is None or k > after) and not table[k]][:size]
        return keys, keys[-1] if keys else after

    @bf.backfill(
        "flags",
        source=read,
        count=lambda conn: sum(not v for v in table.values()),
        batch_size=10,
        retry=RetryPolicy(attempts=attempts),
    )
    def flags(batch: Batch) -> None:
        for k in batch.rows:
            handled[k] += 1
            table[k] = True

    return bf, table, handled


async def _finish_on_a_worker(eng: Engine, bf: Backfills, job_id: str) -> None:
    done = asyncio.Event()

    def seen(ex: Any) -> None:
        if ex.job_id == job_id and ex.outcome == "completed":
            done.set()

    async with maintained_worker(eng.driver, list(bf), poll_interval=0.05, on_execution=seen):
        await asyncio.wait_for(done.wait(), 30)


async def test_i22_a_played_pass_handed_back_is_resumed_by_a_worker_at_its_batch() -> None:
    bf, table, handled = _app()
    eng = Engine(MemoryDriver(), environment="production")
    control = BackfillControl(eng, bf, actor="alice")
    player = await PassPlayer.start(Factory.of(eng), control, "flags", write=True)
    await player.batches(3)
    [run] = await control.history("flags")
    assert (run.status, run.swept, run.batches, run.planned) == ("running", 30, 3, ROWS)
    await player.release()
    await _finish_on_a_worker(eng, bf, player.started.job_id)
    assert all(table.values()) and set(handled.values()) == {1}  # every row once, none twice
    [run] = await control.history("flags")
    assert (run.status, run.swept, run.batches, run.actor) == ("completed", ROWS, 10, "alice")


async def test_i22_a_played_failure_is_dead_and_its_retry_continues_from_the_failed_batch() -> None:
    bf, table, handled = _app(attempts=1)  # dead at its first failure: a real clock cannot skip a backoff
    eng = Engine(MemoryDriver(), environment="production")
    control = BackfillControl(eng, bf, actor="alice")
    player = await PassPlayer.start(Factory.of(eng), control, "flags", write=True)
    await player.batches(2)
    await player.fail(JobsError("X_LOCK_TIMEOUT", cause="lock timeout", fix="retry"))
    job = await eng.driver.job_get(job_id=player.started.job_id)
    assert job is not None and (job.state.value, job.attempt, job.stop_reason) == ("dead", 1, "attempts-exhausted")
    [run] = await control.history("flags")
    assert (run.status, run.swept, run.batches, run.error) == ("failed", 20, 2, "X_LOCK_TIMEOUT: lock timeout")
    assert (await control.retry("flags")).changed
    await _finish_on_a_worker(eng, bf, player.started.job_id)
    assert all(table.values()) and set(handled.values()) == {1}
    [run] = await control.history("flags")
    assert (run.status, run.swept, run.batches, run.error) == ("completed", ROWS, 10, None)


async def test_i22_a_played_pass_whose_source_disagrees_with_its_count_stalls() -> None:
    bf, table, _ = _app()
    table.update({k: True for k in range(50, 60)})  # the count below still matches these ten rows
    bf.backfill("stuck", source=lambda conn, after, size: ([], after), count=lambda conn: 10)(lambda batch: None)
    eng = Engine(MemoryDriver(), environment="production")
    control = BackfillControl(eng, bf, actor="alice")
    player = await PassPlayer.start(Factory.of(eng), control, "stuck", write=True)
    assert await player.finish() == "stalled"
    job = await eng.driver.job_get(job_id=player.started.job_id)
    assert job is not None and (job.state.value, job.stop_reason) == ("dead", "terminal")
    [run] = await control.history("stuck")
    assert run.status == "stalled" and run.error is not None and run.error.startswith("X_BACKFILL_STALLED")
