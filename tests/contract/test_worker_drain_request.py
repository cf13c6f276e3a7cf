"""An operator asks a running worker to drain (jobsctl workers drain ID): the request stands on the
worker's row, the worker sees it on its next heartbeat and drains as on SIGTERM (I14): it stops
claiming, lets in-flight work finish, deregisters. On every driver, with a real worker."""

from __future__ import annotations

import asyncio
import json

import pytest
from typer.testing import CliRunner

from engine.actions import Operator
from engine.api import Engine
from engine.cli import app
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import JobsError
from engine.ids import IdFactory
from engine.introspect import Introspector
from engine.jobs import Registry, job
from engine.runtime.worker import Worker, WorkerConfig
from engine.types import JobState, WorkerRegistration

Q = "drainq"
RELEASE: dict[str, asyncio.Event] = {}


@job(name="drain.slow", queue=Q, idempotency_key=lambda inp: str(inp["n"]))
async def slow(ctx, inp):  # type: ignore[no-untyped-def]
    RELEASE["started"].set()
    await RELEASE["go"].wait()
    return inp["n"]


async def test_a_drain_request_is_recorded_once_shown_and_answered_by_the_heartbeat(
    driver: Driver, clock: FakeClock
) -> None:
    await driver.worker_register(
        worker=WorkerRegistration(id="host:1:abc", host="h", pid=1, queues=(Q,), concurrency=2), now=clock.now()
    )
    beat = await driver.worker_heartbeat(id="host:1:abc", in_use=0, stopping=False, now=clock.now())
    assert beat is not None and not beat.drain_requested
    o = Operator(driver, clock=clock, actor="ann")
    r = await o.drain_worker("host:1:abc", note="INC-3 bad host")
    assert (r.worker, r.requested_by, r.requested_at, r.note, r.changed) == (
        "host:1:abc",
        "ann",
        clock.now(),
        "INC-3 bad host",
        True,
    )
    clock.advance(5)
    again = await Operator(driver, clock=clock, actor="bob").drain_worker("host:1:abc")
    assert (again.requested_by, again.changed) == ("ann", False)  # the first request stands
    beat = await driver.worker_heartbeat(id="host:1:abc", in_use=1, stopping=False, now=clock.now())
    assert beat is not None and (beat.drain_requested_by, beat.drain_requested_at) == ("ann", r.requested_at)
    (w,) = (await Introspector(driver, clock=clock).workers()).workers
    assert (w.drain_requested_by, w.drain_requested_at) == ("ann", r.requested_at)
    # Re-registering the id (a restart) starts with no request.
    await driver.worker_register(
        worker=WorkerRegistration(id="host:1:abc", host="h", pid=2, queues=(Q,), concurrency=2), now=clock.now()
    )
    beat = await driver.worker_heartbeat(id="host:1:abc", in_use=0, stopping=False, now=clock.now())
    assert beat is not None and not beat.drain_requested


async def test_an_unknown_worker_or_a_scoped_or_read_only_operator_is_refused(driver: Driver, clock: FakeClock) -> None:
    await driver.worker_register(
        worker=WorkerRegistration(id="host:1:abc", host="h", pid=1, queues=(Q,), concurrency=2), now=clock.now()
    )
    for actor, kw, wid, code in (
        ("ann", {}, "host:1:abd", "X_UNKNOWN_WORKER"),
        ("ann", {"read_only": True}, "host:1:abc", "X_READ_ONLY"),
        ("ann", {"tenant": "acme"}, "host:1:abc", "X_INVALID_ARGUMENT"),
        ("ann", {}, " ", "X_INVALID_ARGUMENT"),
    ):
        with pytest.raises(JobsError) as e:
            await Operator(driver, clock=clock, actor=actor, **kw).drain_worker(wid)
        assert e.value.code == code
    with pytest.raises(JobsError) as e:
        await Operator(driver, clock=clock, actor="ann").drain_worker("host:1:abd")
    assert "did you mean 'host:1:abc'" in e.value.cause and e.value.fix == "jobsctl workers drain host:1:abc"
    beat = await driver.worker_heartbeat(id="host:1:abc", in_use=0, stopping=False, now=clock.now())
    assert beat is not None and not beat.drain_requested


async def test_i14_a_worker_asked_to_drain_stops_claiming_finishes_its_work_and_deregisters(
    driver: Driver, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    RELEASE.clear()
    RELEASE.update(started=asyncio.Event(), go=asyncio.Event())
    eng = Engine(driver, clock=clock, ids=IdFactory(clock, seed=11))
    # A poll past the heartbeat: advancing the clock to the heartbeat must not also start a claim that
    # could race the second enqueue (a claim sent before the request was seen may take it).
    config = WorkerConfig(queues=(Q,), concurrency=2, heartbeat_interval=5.0, poll_interval=60.0, flush_interval=0.001)
    w = Worker(driver, Registry([slow]), config=config, clock=clock)
    await w.start()
    try:
        first = await eng.aenqueue(slow, {"n": 1})
        await asyncio.wait_for(RELEASE["started"].wait(), timeout=10)  # a safety net, never the path

        # Asked through the CLI, as on-call would.
        monkeypatch.setattr("engine.api.connect", lambda dsn, **kw: _Lent(driver, clock=clock))
        res = await asyncio.to_thread(
            CliRunner().invoke, app, ["workers", "drain", w.id, "--actor", "ann", "--dsn", "memory://x", "--json"]
        )
        assert res.exit_code == 0 and json.loads(res.stdout)["requested_by"] == "ann"

        clock.advance(5)  # the next heartbeat answers the request: the worker stops claiming
        while not w._stopping:
            await asyncio.sleep(0)
        second = await eng.aenqueue(slow, {"n": 2})
        RELEASE["go"].set()  # the job in flight finishes within the grace
        await asyncio.wait_for(w.wait_stopped(), timeout=10)
    finally:
        RELEASE["go"].set()
        await w.drain()
    assert (await eng.aget(first.id)).state is JobState.COMPLETED
    assert (await eng.aget(second.id)).state is JobState.READY  # never claimed after the request
    assert await driver.worker_list(now=clock.now()) == []


class _Lent(Engine):
    async def aclose(self) -> None:  # the test's driver outlives the command
        return None
