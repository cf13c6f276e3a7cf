"""A worker's heartbeat against the maintenance leader's reap window (worker_reap_after), run
against every driver where the behaviour is the driver's: a live worker whose row was reaped (a
long stall, a heartbeat slower than the window) registers again at its next heartbeat, keeps the
job it runs (its leases, renewed apart from the heartbeat, never lapsed) and holds its presence
on the new row, so that a later death of it is still noticed; a heartbeat a reap window could
overtake is refused where a worker and its maintenance meet (maintained_worker)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from engine.api import Engine
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.drivers.memory import MemoryDriver
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.jobs import Registry, job
from engine.runtime.execute import Execution
from engine.runtime.metrics import Metrics
from engine.runtime.presence import Presence
from engine.runtime.worker import Worker, WorkerConfig
from engine.services.maintenance import MaintenanceConfig, maintained_worker
from engine.types import JobState, WorkerRegistration

Q = "reap"
RUNS: list[int] = []
GATES: dict[str, asyncio.Event] = {}


@job(name="reap.held", queue=Q, idempotency_key=lambda inp: str(inp["n"]))
async def held(ctx, inp):  # type: ignore[no-untyped-def]
    RUNS.append(inp["n"])
    GATES["started"].set()
    await GATES["go"].wait()
    return inp["n"]


def _told(driver: Driver, method: str) -> asyncio.Event:
    """An event set each time ``driver.<method>`` has answered (the driver's own, wrapped)."""
    done, own = asyncio.Event(), getattr(driver, method)

    async def told(**kw: Any) -> Any:
        answer = await own(**kw)
        done.set()
        return answer

    setattr(driver, method, told)
    return done


async def _register(driver: Driver, clock: FakeClock, wid: str) -> None:
    await driver.worker_register(
        worker=WorkerRegistration(id=wid, host="h", pid=1, queues=(Q,), concurrency=1), now=clock.now()
    )


async def test_a_live_worker_whose_row_was_reaped_registers_again_at_its_next_heartbeat_and_keeps_its_job(
    driver: Driver, clock: FakeClock
) -> None:
    RUNS.clear()
    GATES.update(started=asyncio.Event(), go=asyncio.Event())
    beat, registered = _told(driver, "worker_heartbeat"), _told(driver, "worker_register")
    config = WorkerConfig(queues=(Q,), concurrency=1, heartbeat_interval=5.0, poll_interval=60.0, flush_interval=0.001)
    seen: asyncio.Queue[Execution] = asyncio.Queue()
    w = Worker(driver, Registry([held]), config=config, clock=clock, on_execution=seen.put_nowait)
    eng = Engine(driver, clock=clock)
    await w.start()
    try:
        enq = await eng.aenqueue(held, {"n": 1})
        await GATES["started"].wait()  # claimed and running; the loops, the heartbeat's too, started
        clock.advance(5)
        await beat.wait()  # a heartbeat landed; the next is due in 5 s
        registered.clear()
        clock.advance(1)
        assert await driver.worker_reap(before=clock.now()) == [w.id]  # reaped while alive (a stall)
        assert await driver.worker_list(now=clock.now()) == []
        clock.advance(4)
        await registered.wait()  # its next heartbeat found no row and registered it again
        await w.presence.hold()  # with the heartbeat's own hold: held, and noted on the new row
        assert [r.id for r in await driver.worker_list(now=clock.now())] == [w.id]
        row = await driver.job_get(job_id=enq.id)
        assert row is not None and (row.state, row.claimed_by, row.run) == (JobState.RUNNING, w.id, 1)
        GATES["go"].set()
        ex = await asyncio.wait_for(seen.get(), timeout=10)  # once its ack landed; a safety net only
        assert (ex.job_id, ex.outcome) == (enq.id, "completed")
        assert RUNS == [1]  # ran once: never re-delivered while it ran
        await driver.worker_presence_release(id=w.id)  # as a killed process's session ends
        assert await driver.worker_gone() == [w.id]  # judged by its presence on the new row
        await w.presence.hold()
    finally:
        GATES["go"].set()
        await w.drain()


async def test_a_presence_look_between_a_reaped_workers_release_and_its_registering_again_leaves_it_judged(
    driver: Driver, clock: FakeClock
) -> None:
    """The heartbeat of a reaped worker releases its presence, registers and holds it again; the
    presence loop's look may land between the two. It must not take the presence itself (noted on
    no row, then found held by the hold after the registration, which would note none on the new
    row): such a worker, killed later, would never be judged gone."""
    looked = _told(driver, "worker_gone")
    p = Presence(driver, clock, worker="w1", interval=3600.0, metrics=Metrics())
    await _register(driver, clock, "w1")
    await p.hold()
    clock.advance(1)
    assert await driver.worker_reap(before=clock.now()) == ["w1"]
    await p.release()  # the heartbeat found no row
    loop = asyncio.get_running_loop().create_task(p.run())  # its look lands here
    await looked.wait()
    loop.cancel()
    await asyncio.gather(loop, return_exceptions=True)
    await _register(driver, clock, "w1")  # registered again...
    await p.hold()  # ...and its presence held again
    await driver.worker_presence_release(id="w1")  # later its process dies: its session ends
    assert await driver.worker_gone() == ["w1"]
    await p.release()


@pytest.mark.parametrize(
    ("beat", "reap"),
    [(300.0, 600.0), (201.0, 600.0), (20.0, 59.0)],
    ids=["beat-half-the-window", "beat-just-over-a-third", "short-window"],
)
def test_a_heartbeat_its_own_leaders_reap_window_could_overtake_is_refused(beat: float, reap: float) -> None:
    mc = None if reap == 600.0 else MaintenanceConfig(worker_reap_after=reap)
    with pytest.raises(JobsError) as err:
        maintained_worker(MemoryDriver(), Registry([held]), heartbeat_interval=beat, maintenance_config=mc)
    assert err.value.code == X_INVALID_ARGUMENT
    assert f"heartbeat_interval={beat:g}" in err.value.cause and f"reaped {reap:g} s" in err.value.cause
    assert err.value.fix == f"heartbeat_interval={int(reap / 3 * 1000) / 1000:g}"  # rounded down
    fixed = float(err.value.fix.partition("=")[2])
    maintained_worker(MemoryDriver(), Registry([held]), heartbeat_interval=fixed, maintenance_config=mc)  # the fix


def test_a_heartbeat_is_not_held_to_a_reap_window_no_maintenance_of_its_own_runs() -> None:
    """Without maintenance the worker's leader is another process, whose window is not known here;
    its heartbeat re-registers it when reaped (the first test)."""
    maintained_worker(MemoryDriver(), Registry([held]), heartbeat_interval=300.0, maintenance=False)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"worker_reap_after": 14.0}, "worker_reap_after=14"),
        ({"leader_lease": 0.5, "interval": 0.1}, "leader_lease=0.5"),
        ({"interval": 60.0}, "interval=60 is not shorter than leader_lease=30"),
        ({"interval": 5.0, "leader_lease": 5.0}, "interval=5 is not shorter than leader_lease=5"),
    ],
)
def test_a_maintenance_lease_or_reap_window_too_short_is_refused_at_declaration(
    options: dict[str, float], named: str
) -> None:
    with pytest.raises(JobsError) as err:
        MaintenanceConfig(**options)  # type: ignore[arg-type]
    assert err.value.code == X_INVALID_ARGUMENT and named in err.value.cause
    assert err.value.fix.startswith("MaintenanceConfig(")


def test_the_shortest_maintenance_lease_and_reap_window_are_taken() -> None:
    cfg = MaintenanceConfig(worker_reap_after=15.0, leader_lease=1.0, interval=0.5)
    assert (cfg.worker_reap_after, cfg.leader_lease) == (15.0, 1.0)
