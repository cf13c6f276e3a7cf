"""``Enqueue(...)`` given a field it does not have, or without its input, is refused the way
``eng.enqueue(..., prority=1)`` is (X_INVALID_ARGUMENT, "did you mean", a fix to write) on every
driver, in a batch and in a step's fan-out, and nothing is written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine.api import Engine, Enqueue
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.ids import IdFactory
from engine.jobs import job
from engine.projections import JobFilter
from engine.runtime.steps import StepApi
from engine.types import JobRow
from tests.contract.test_steps_harness import attempt, enqueue

ROOT = Path(__file__).resolve().parents[2]


@job(name="uf.thumb", queue="uf-kids", idempotency_key=lambda inp: f"thumb:{inp['n']}")
async def thumb(ctx, inp):  # type: ignore[no-untyped-def]
    return inp


async def _kids(driver: Driver) -> list[Any]:
    where = JobFilter(queue="uf-kids")
    return list((await driver.job_page(where=where, limit=10, cursor=None, count_cap=10, budget_ms=None)).items)


def _build(**fields: Any) -> Enqueue:
    return Enqueue(thumb, {"n": 1}, **fields)


@pytest.mark.parametrize(
    ("fields", "says", "fix"),
    [
        (
            {"prority": 1},
            "Enqueue() has no field 'prority' (did you mean 'priority'?)",
            "Enqueue(job, input, priority=...)",
        ),
        ({"tenat": "acme"}, "(did you mean 'tenant'?)", "Enqueue(job, input, tenant=...)"),
        (
            {"queue": "other"},
            "its options: job, input, tenant, delay, run_at, priority",
            "Enqueue(job, input, tenant=...)",
        ),
    ],
)
def test_an_enqueue_with_an_unknown_field_is_refused_with_the_nearest_field(
    fields: dict[str, Any], says: str, fix: str
) -> None:
    with pytest.raises(JobsError) as exc:
        _build(**fields)
    assert exc.value.code == X_INVALID_ARGUMENT and says in exc.value.cause and exc.value.fix == fix


@pytest.mark.parametrize(
    ("build", "says"),
    [
        (lambda: Enqueue(thumb, inputs={"n": 1}), "Enqueue() has no field 'inputs' (did you mean 'input'?)"),  # type: ignore[call-arg]
        (lambda: Enqueue(thumb), "Enqueue() of job 'uf.thumb' was given no input"),  # type: ignore[call-arg]
    ],
)
def test_an_enqueue_without_its_input_is_refused_with_the_call_to_write(build: Any, says: str) -> None:
    with pytest.raises(JobsError) as exc:
        build()
    assert exc.value.code == X_INVALID_ARGUMENT and says in exc.value.cause and exc.value.fix == "Enqueue(job, input)"


def test_mypy_refuses_an_enqueue_with_an_unknown_field_or_without_its_input(tmp_path: Path) -> None:
    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        "from engine.newjobs import Enqueue\n"
        "from tests.contract.test_enqueue_unknown_field import thumb\n"
        "Enqueue(thumb, {'n': 1}, prority=1)\n"
        "Enqueue(thumb)\n"
        "Enqueue(thumb, {'n': 1}, priority=1)\n"
    )
    cmd = [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), str(snippet)]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True).stdout
    assert 'snippet.py:3: error: Unexpected keyword argument "prority" for "Enqueue"' in out, out
    assert 'snippet.py:4: error: Missing positional argument "input" in call to "Enqueue"' in out, out
    assert "snippet.py:5:" not in out, out


def test_an_enqueue_keeps_its_fields_positionally_and_by_name() -> None:
    e = Enqueue(thumb, {"n": 1}, "acme", 5.0, None, 3)
    assert e == Enqueue(job=thumb, input={"n": 1}, tenant="acme", delay=5.0, priority=3)
    assert (e.tenant, e.delay, e.priority) == ("acme", 5.0, 3) and e._replace(priority=4).priority == 4


async def test_a_batch_holding_an_unknown_field_writes_nothing(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    eng = Engine(driver, clock=clock, ids=ids)
    with pytest.raises(JobsError) as exc:
        await eng.aenqueue_many([Enqueue(thumb, {"n": 1}), Enqueue(thumb, {"n": 2}, prority=1)])  # type: ignore[call-arg]
    assert exc.value.code == X_INVALID_ARGUMENT and "did you mean 'priority'" in exc.value.cause
    assert await _kids(driver) == []


async def test_a_fan_out_holding_an_unknown_field_fails_its_run_with_the_refusal_and_writes_nothing(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    eng = Engine(driver, clock=clock, ids=ids)

    async def handler(step: StepApi, row: JobRow) -> Any:
        return await step.enqueue("fan-out", [Enqueue(thumb, {"n": n}, prority=n) for n in (1, 2)])  # type: ignore[call-arg]

    parent = await enqueue(driver, ids, clock)
    out = await attempt(driver, clock, handler, engine=eng)
    assert out.kind == "failed" and isinstance(out.error, JobsError), out.error
    assert out.error.code == X_INVALID_ARGUMENT and "did you mean 'priority'" in out.error.cause
    assert await driver.step_load(job_id=parent) == []
    assert await _kids(driver) == []
