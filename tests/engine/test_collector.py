"""The cycle collector's youngest generation while workers run (engine/runtime/collector.py): sized
for the jobs a worker keeps in flight, given back when the last worker stops, and never taken
from the application that set its own."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from engine.drivers.memory import MemoryDriver
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.jobs import Registry, job
from engine.runtime import collector
from engine.runtime.worker import Worker
from engine.runtime.worker_config import WorkerConfig


@job(name="gc.noop", queue="gc-q", idempotency_key=lambda inp: inp["k"])
async def noop(ctx, inp):  # type: ignore[no-untyped-def]
    return None


@pytest.fixture(autouse=True)
def default_threshold(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts from CPython's default threshold with no worker holding (a worker another
    test in this process left running is put aside), and the process's own comes back after."""
    before = gc.get_threshold()
    monkeypatch.setattr(collector, "_needs", [])
    monkeypatch.setattr(collector, "_base", None)
    monkeypatch.setattr(collector, "_applied", None)
    gc.set_threshold(700, before[1], before[2])
    yield
    gc.set_threshold(*before)


async def test_a_running_worker_sizes_the_youngest_generation_for_its_slots_and_gives_it_back() -> None:
    async with Worker(MemoryDriver(), Registry([noop]), config=WorkerConfig(concurrency=200)):
        assert gc.get_threshold()[0] == collector.OBJECTS_PER_SLOT * 200
    assert gc.get_threshold()[0] == 700


async def test_tune_gc_false_leaves_the_collector_alone() -> None:
    async with Worker(MemoryDriver(), Registry([noop]), config=WorkerConfig(concurrency=200, tune_gc=False)):
        assert gc.get_threshold()[0] == 700
    assert gc.get_threshold()[0] == 700


async def test_a_worker_with_few_slots_never_lowers_the_threshold() -> None:
    async with Worker(MemoryDriver(), Registry([noop]), config=WorkerConfig(concurrency=2)):
        assert gc.get_threshold()[0] == 700  # 2 slots want 100: the process's 700 stays


def test_the_largest_running_worker_sets_the_threshold_until_the_last_one_stops() -> None:
    assert collector.hold(100) == 5_000
    assert collector.hold(300) == 15_000
    assert collector.release(300) == 5_000  # the one still running keeps its own
    assert gc.get_threshold()[0] == 5_000
    assert collector.release(100) == 700
    assert gc.get_threshold()[0] == 700


def test_a_threshold_the_application_sets_meanwhile_is_its_floor_and_the_one_given_back() -> None:
    collector.hold(100)
    gc.set_threshold(20_000)  # the application's own, while the worker runs
    assert collector.hold(200) == 20_000  # above what either worker wants: left as it is
    assert collector.release(200) == 20_000
    gc.set_threshold(300)  # lowered again by the application
    assert collector.release(100) == 300  # the application's, not the 700 the first worker found


def test_collection_turned_off_by_the_application_stays_off() -> None:
    gc.set_threshold(0)
    assert collector.hold(200) == 0
    assert gc.get_threshold()[0] == 0
    assert collector.release(200) == 0


def test_tune_gc_takes_only_a_boolean() -> None:
    with pytest.raises(JobsError) as err:
        WorkerConfig(tune_gc="yes")  # type: ignore[arg-type]
    assert err.value.code == X_INVALID_ARGUMENT and err.value.fix == "tune_gc=True"
    assert "tune_gc='yes' must be True or False" in err.value.cause
