"""A stage into a memory transaction that already ended is refused and writes nothing: nothing
would ever commit it, and publishing it at once would run a job its caller meant to stage."""

from __future__ import annotations

import pytest

from engine.api import Engine
from engine.clock import FakeClock
from engine.drivers.memory import MemoryDriver
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.ids import IdFactory
from engine.jobs import job


@job(name="ended.send", queue="q", idempotency_key=lambda inp: str(inp["n"]))
async def send(ctx, inp):  # type: ignore[no-untyped-def]
    return None


@pytest.mark.parametrize("end", ["commit", "rollback"])
async def test_a_stage_into_an_ended_memory_transaction_is_refused_and_writes_nothing(
    clock: FakeClock, end: str
) -> None:
    mem = MemoryDriver()
    eng = Engine(mem, clock=clock, ids=IdFactory(clock, seed=5))
    with mem.transaction() as tx:
        await eng.astage(tx, send, {"n": 1})
        getattr(tx, end)()
    with pytest.raises(JobsError) as err:
        await eng.astage(tx, send, {"n": 2})
    assert err.value.code == X_INVALID_ARGUMENT and "already committed or rolled back" in err.value.cause
    assert len(mem.state.outbox) == (1 if end == "commit" else 0) and not mem.state.jobs
