"""I22: a backfill's pass starts only through BackfillControl.start, past every gate. Its handle
given to enqueue, enqueue_many, stage or a handler's fan-out is refused before anything is
written, naming the backfill and the command that starts it; the start itself enqueues it."""

from __future__ import annotations

from typing import Any

import pytest

from engine import Enqueue
from engine.api import Engine
from engine.backfills import BackfillControl, Backfills, Batch
from engine.drivers.memory import MemoryDriver
from engine.errors import X_INVALID_ARGUMENT, JobsError


def _app() -> tuple[Backfills, Any]:
    bf = Backfills(version="1")

    @bf.backfill("flags", source=lambda conn, after, size: ([], after), count=lambda conn: 0, environments=["staging"])
    def flags(batch: Batch) -> None: ...

    return bf, flags


def _refused(call: Any) -> JobsError:
    with pytest.raises(JobsError) as info:
        call()
    err = info.value
    assert err.code == X_INVALID_ARGUMENT
    assert "backfill 'flags'" in err.cause and "gates" in err.cause
    assert err.fix.startswith("jobsctl backfill flags --app ") and err.fix.endswith(" --write")
    return err


async def test_i22_a_pass_enqueued_or_staged_as_a_plain_job_is_refused_writing_nothing() -> None:
    _, flags = _app()
    eng = Engine(MemoryDriver(), environment="production")  # a pass here would skip its environment gate
    _refused(lambda: eng.enqueue(flags, {"run": "r1", "environment": "staging", "write": True}))
    _refused(lambda: eng.enqueue_many([Enqueue(flags, {"run": "r1"})]))
    with eng.driver.transaction() as tx:  # type: ignore[attr-defined]
        _refused(lambda: eng.stage(tx, flags, {"run": "r1"}))
    assert eng.driver.state.jobs == {} and eng.driver.state.outbox == {}  # type: ignore[attr-defined]
    eng.close()


async def test_i22_the_start_enqueues_the_pass_its_gates_let_through() -> None:
    bf, _ = _app()
    eng = Engine(MemoryDriver(), environment="staging")
    started = await BackfillControl(eng, bf, actor="ops").start("flags", write=True)
    row = await eng.aget(started.job_id)
    assert (row.name, row.input["environment"]) == ("backfill:flags", "staging")
