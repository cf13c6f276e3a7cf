"""A live worker whose row was reaped registers again at its next heartbeat with what it knows of
itself: its start time, its heartbeat interval, and, when it had seen an operator's drain request,
that request and its draining. It keeps draining (the drain runs in its process), and its new row
says so: the request stands, asking again changes nothing. On every driver, with a real worker."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from engine.actions import Operator
from engine.api import Engine
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.jobs import Registry, job
from engine.runtime.worker import Worker, WorkerConfig
from engine.types import JobState

Q = "rereg"
GATES: dict[str, asyncio.Event] = {}


@job(name="rereg.held", queue=Q, idempotency_key=lambda inp: str(inp["n"]))
async def held(ctx, inp):  # type: ignore[no-untyped-def]
    GATES["started"].set()
    await GATES["go"].wait()
    return inp["n"]


def _told(driver: Driver, method: str, when: Callable[[dict[str, Any]], bool] = lambda kw: True) -> asyncio.Event:
    """An event set each time ``driver.<method>``, called with arguments ``when`` accepts, has answered."""
    done, own = asyncio.Event(), getattr(driver, method)

    async def told(**kw: Any) -> Any:
        answer = await own(**kw)
        if when(kw):
            done.set()
        return answer

    setattr(driver, method, told)
    return done


def _config() -> WorkerConfig:
    return WorkerConfig(
        queues=(Q,), concurrency=1, heartbeat_interval=5.0, poll_interval=60.0, flush_interval=0.001, grace=3600.0
    )


async def test_a_reaped_worker_registers_again_with_its_own_start_time_and_heartbeat_interval(
    driver: Driver, clock: FakeClock
) -> None:
    GATES.update(started=asyncio.Event(), go=asyncio.Event())
    started = clock.now()
    beat, registered = _told(driver, "worker_heartbeat"), _told(driver, "worker_register")
    w = Worker(driver, Registry([held]), config=_config(), clock=clock)
    await w.start()
    try:
        await Engine(driver, clock=clock).aenqueue(held, {"n": 1})
        await GATES["started"].wait()  # claimed and running; the loops, the heartbeat's too, started
        registered.clear()
        clock.advance(5)
        await beat.wait()
        clock.advance(1)
        assert await driver.worker_reap(before=clock.now()) == [w.id]
        clock.advance(4)
        await registered.wait()  # its next heartbeat found no row
        (row,) = await driver.worker_list(now=clock.now())
        assert (row.id, row.started_at, row.heartbeat_at, row.heartbeat_interval, row.stopping) == (
            w.id,
            started,
            clock.now(),
            5.0,
            False,
        )
        assert row.drain_requested_at is None
    finally:
        GATES["go"].set()
        await w.drain()


async def test_a_worker_that_saw_a_drain_request_keeps_draining_after_its_row_was_reaped_and_its_new_row_says_so(
    driver: Driver, clock: FakeClock
) -> None:
    GATES.update(started=asyncio.Event(), go=asyncio.Event())
    started = clock.now()
    beat, registered = _told(driver, "worker_heartbeat"), _told(driver, "worker_register")
    draining_beat = _told(driver, "worker_heartbeat", lambda kw: kw["stopping"])
    w = Worker(driver, Registry([held]), config=_config(), clock=clock)
    eng = Engine(driver, clock=clock)
    await w.start()
    try:
        first = await eng.aenqueue(held, {"n": 1})
        await GATES["started"].wait()  # running: the drain waits for it (a grace of an hour)
        asked = await Operator(driver, clock=clock, actor="ann").drain_worker(w.id, note="bad host")
        clock.advance(5)
        await draining_beat.wait()  # its heartbeat answered the request: it drains, and said so
        beat.clear()
        registered.clear()
        clock.advance(1)
        assert await driver.worker_reap(before=clock.now()) == [w.id]  # reaped while it drains (a stall)
        clock.advance(4)
        await registered.wait()  # its next heartbeat found no row
        (row,) = await driver.worker_list(now=clock.now())
        assert (row.id, row.started_at, row.stopping, row.drain_requested_by, row.drain_requested_at) == (
            w.id,
            started,
            True,
            "ann",
            asked.requested_at,
        )
        again = await Operator(driver, clock=clock, actor="bob").drain_worker(w.id)
        assert (again.requested_by, again.requested_at, again.changed) == ("ann", asked.requested_at, False)
        later = await eng.aenqueue(held, {"n": 2})  # it claims no more: the drain goes on
        GATES["go"].set()
        await asyncio.wait_for(w.wait_stopped(), timeout=30)  # a safety net only
        assert await driver.worker_list(now=clock.now()) == []  # drained to its end: deregistered
        done = await driver.job_get(job_id=first.id)
        assert done is not None and done.state is JobState.COMPLETED
        waiting = await driver.job_get(job_id=later.id)
        assert waiting is not None and (waiting.state, waiting.run) == (JobState.READY, 0)
    finally:
        GATES["go"].set()
        await w.drain()
