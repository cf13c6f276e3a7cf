"""Per-job limits (engine/runtime/limits.py): a rate limit's key is the app's function, called
before each run; one that cannot answer is refused at declaration or fails the attempt, never a
run that ends in a settle failure and is re-delivered for ever."""

from __future__ import annotations

from typing import Any

import pytest

from engine.api import Engine
from engine.clock import FakeClock
from engine.drivers.memory import MemoryDriver
from engine.errors import JobsError
from engine.ids import IdFactory
from engine.jobs import RateLimit, job
from engine.types import JobState
from tests.engine.test_worker import Q, next_of, running


def _tenant_key(inp: Any, tenant: str | None) -> str:
    return inp["region"]  # a KeyError for an input without one


@job(
    name="l.keyed",
    queue=Q,
    idempotency_key=lambda inp: str(inp["n"]),
    rate_limit=RateLimit(limit=5, per=1.0, key=_tenant_key),
)
async def keyed(ctx, inp):  # type: ignore[no-untyped-def]
    return inp["n"]


@pytest.fixture
def mem() -> MemoryDriver:
    return MemoryDriver()


@pytest.fixture
def eng(mem: MemoryDriver, clock: FakeClock) -> Engine:
    return Engine(mem, clock=clock, ids=IdFactory(clock, seed=5))


def test_a_rate_limit_key_that_cannot_take_input_and_tenant_is_refused_at_declaration() -> None:
    with pytest.raises(JobsError) as e:
        RateLimit(limit=1, per=1.0, key=lambda inp: "k")  # type: ignore[arg-type, misc]
    assert e.value.code == "X_INVALID_DEFINITION" and "takes (inp)" in e.value.cause
    assert "key=lambda inp, tenant:" in e.value.fix
    assert RateLimit(limit=1, per=1.0, key=lambda *a: "k").key is not None  # a function taking any arguments


async def test_a_rate_limit_key_that_raises_fails_the_attempt_instead_of_never_settling(
    mem: MemoryDriver, clock: FakeClock, eng: Engine
) -> None:
    async with running(mem, clock, keyed) as (w, seen):
        bad = await eng.aenqueue(keyed, {"n": 1})  # no "region": the key raises KeyError
        ex = await next_of(seen)
        assert (ex.job_id, ex.outcome, ex.error_code) == (bad.id, "dead", "X_INVALID_ARGUMENT")
        assert "rate_limit key of job 'l.keyed' raised" in (ex.error or "") and "KeyError" in (ex.error or "")
        good = await eng.aenqueue(keyed, {"n": 2, "region": "eu"})
        assert ((await next_of(seen)).job_id, (await eng.aget(good.id)).state) == (good.id, JobState.COMPLETED)
    row = await eng.aget(bad.id)
    assert (row.state, row.attempt) == (JobState.DEAD, 1)
