"""Every loop of a worker, and each service beside it, says a failed call as what it is, in one
shape (engine/runtime/failures.py): a lost connection as `jobs.worker.reconnecting` (counted in
jobs_worker_reconnects_total{what}), anything else (a statement refused, a bug) as
`jobs.worker.error` with its code and fix (counted in jobs_worker_errors_total{what,code}), and
`jobs.worker.recovered` once a call lands. A worker whose heartbeats or lease renewals keep
failing so is not ready; a relay's or a scheduler's probes read their passes and ticks alike."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import pytest

from engine.clock import FakeClock
from engine.drivers.memory import MemoryDriver
from engine.errors import X_PERMISSION_DENIED, ConnectionLost, JobsError
from engine.runtime.health import Health
from engine.runtime.leases import LeaseKeeper
from engine.runtime.metrics import Metrics
from engine.services.relay import Relay, RelayConfig, relay_health
from engine.services.scheduler import Scheduler, SchedulerConfig, scheduler_health
from engine.types import Claim
from tests.engine.test_worker import fast, running

REFUSED = JobsError(
    X_PERMISSION_DENIED,
    cause="the database refused role 'app': permission denied for table worker",
    fix="GRANT jobs_writer TO app",
)
LOST = ConnectionLost("the connection to the database failed: server closed the connection unexpectedly")


def _events(caplog: pytest.LogCaptureFixture, what: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (r.getMessage(), dict(getattr(r, "fields", {})))
        for r in caplog.records
        if r.name == "jobs" and getattr(r, "fields", {}).get("what") == what
    ]


def _value(metrics: Metrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


class Scripted:
    """The memory driver's ``name``: each call takes the next of ``script`` (an error raised, or
    None: the real call), then the real call; ``calls`` gets each call's end."""

    def __init__(self, mem: MemoryDriver, name: str, script: list[Exception | None]) -> None:
        self.real, self.script = getattr(mem, name), list(script)
        self.calls: asyncio.Queue[int] = asyncio.Queue()
        self.n = 0
        setattr(mem, name, self)

    async def __call__(self, **kw: Any) -> Any:
        self.n += 1
        step = self.script.pop(0) if self.script else None
        if step is not None:
            self.calls.put_nowait(self.n)
            raise step
        answer = await self.real(**kw)
        self.calls.put_nowait(self.n)
        return answer

    async def next_call(self) -> int:
        return await asyncio.wait_for(self.calls.get(), timeout=10)  # a safety net, never the expected path


class BeatClock(FakeClock):
    """A fake clock that says when the heartbeat loop (the one sleeper of ``BEAT`` seconds) sleeps."""

    def __init__(self) -> None:
        super().__init__()
        self.asleep = asyncio.Event()

    async def sleep(self, seconds: float) -> None:
        if seconds == BEAT:
            self.asleep.set()
        await super().sleep(seconds)

    async def beat(self) -> None:
        """Once the heartbeat loop sleeps, move time on to its next heartbeat."""
        await self.asleep.wait()
        self.asleep.clear()
        self.advance(BEAT)


BEAT = 7.0  # seconds between heartbeats: no other loop of the worker sleeps as long


async def test_a_heartbeat_the_database_refuses_is_an_error_not_a_reconnect_and_the_worker_is_not_ready(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="jobs")
    mem, clock = MemoryDriver(), BeatClock()
    beats = Scripted(mem, "worker_heartbeat", [REFUSED, REFUSED, None])
    async with running(mem, clock, fast, heartbeat_interval=BEAT) as (w, _):
        for _ in range(2):
            await clock.beat()
            await beats.next_call()
        ok, why = w.health.ready()
        assert not ok and why == f"its heartbeats fail, retried ({X_PERMISSION_DENIED}: {REFUSED.cause})"
        assert _events(caplog, "heartbeat") == [
            (
                "jobs.worker.error",
                {"what": "heartbeat", "worker": w.id, "code": X_PERMISSION_DENIED, "error": REFUSED.cause}
                | {"fix": REFUSED.fix, "failures": n},
            )
            for n in (1, 2)
        ]
        assert _value(w.metrics, "jobs_worker_errors_total", what="heartbeat", code=X_PERMISSION_DENIED) == 2
        assert _value(w.metrics, "jobs_worker_reconnects_total", what="heartbeat") is None
        await clock.beat()  # the GRANT is back: the next heartbeat lands
        await beats.next_call()
        assert w.health.ready() == (True, "registered and heartbeating")
        assert _events(caplog, "heartbeat")[-1] == (
            "jobs.worker.recovered",
            {"what": "heartbeat", "worker": w.id, "failures": 2},
        )


def _keeper(mem: MemoryDriver, clock: FakeClock) -> tuple[LeaseKeeper, Health]:
    health = Health(clock, heartbeat_interval=5)
    health.started = True
    keeper = LeaseKeeper(mem, clock, worker="w1", lease_seconds=30, interval=10, metrics=Metrics(), health=health)
    keeper.hold(Claim("j1", "w1", 1), "q", "x.ok")
    return keeper, health


async def test_a_renewal_that_fails_with_a_bug_is_an_error_not_a_reconnect_and_the_worker_is_not_ready(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobs")
    mem = MemoryDriver()
    bug = TypeError("job_renew_many() got an unexpected keyword argument 'slots'")
    Scripted(mem, "job_renew_many", [bug, None])
    keeper, health = _keeper(mem, clock)
    await keeper.renew_once()
    ok, why = health.ready()
    assert not ok and why == f"its lease renewals fail, retried (TypeError: {bug})"
    assert _events(caplog, "renew") == [
        ("jobs.worker.error", {"what": "renew", "worker": "w1", "code": "TypeError", "error": str(bug), "failures": 1})
    ]
    assert _value(keeper.metrics, "jobs_worker_errors_total", what="renew", code="TypeError") == 1
    assert _value(keeper.metrics, "jobs_worker_reconnects_total", what="renew") is None
    await keeper.renew_once()
    assert health.ready()[0]
    assert _events(caplog, "renew")[-1] == ("jobs.worker.recovered", {"what": "renew", "worker": "w1", "failures": 1})


async def test_a_renewal_that_lost_its_connection_still_reconnects_and_leaves_readiness_to_the_heartbeats(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobs")
    mem = MemoryDriver()
    Scripted(mem, "job_renew_many", [LOST, None])
    keeper, health = _keeper(mem, clock)
    await keeper.renew_once()
    assert health.ready()[0]
    assert [e for e, _ in _events(caplog, "renew")] == ["jobs.worker.reconnecting"]
    assert _value(keeper.metrics, "jobs_worker_reconnects_total", what="renew") == 1
    await keeper.renew_once()
    assert [e for e, _ in _events(caplog, "renew")] == ["jobs.worker.reconnecting", "jobs.worker.reconnected"]
    assert _value(keeper.metrics, "jobs_worker_errors_total", what="renew", code="ConnectionLost") is None


async def test_a_relay_pass_the_database_refuses_is_an_error_and_its_probes_are_not_ready_until_one_lands(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobs")
    mem, metrics = MemoryDriver(), Metrics()
    config = RelayConfig(id="relay-1")
    health = relay_health(config, clock)
    Scripted(mem, "outbox_publish_batch", [None, REFUSED, REFUSED, None])
    relay = Relay(mem, clock, config=config, metrics=metrics, health=health)
    await relay.publish_pending()
    assert health.ready()[0]
    for _ in range(2):
        await relay.publish_pending()
    ok, why = health.ready()
    assert not ok and why == f"its passes fail, retried ({X_PERMISSION_DENIED}: {REFUSED.cause})"
    assert [(e, f["code"], f["failures"], f["fix"]) for e, f in _events(caplog, "relay")] == [
        ("jobs.worker.error", X_PERMISSION_DENIED, n, REFUSED.fix) for n in (1, 2)
    ]
    assert _value(metrics, "jobs_worker_errors_total", what="relay", code=X_PERMISSION_DENIED) == 2
    await relay.publish_pending()
    assert health.ready()[0]
    assert _events(caplog, "relay")[-1] == (
        "jobs.worker.recovered",
        {"what": "relay", "worker": "relay-1", "failures": 2},
    )


async def test_a_scheduler_tick_that_fails_with_a_bug_is_an_error_and_its_probes_are_not_ready(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobs")
    mem, metrics = MemoryDriver(), Metrics()
    config = SchedulerConfig()
    health = scheduler_health(config, clock)
    bug = KeyError("term")
    ticks = Scripted(mem, "leader_acquire", [None, bug])
    sched = Scheduler(mem, clock, holder="s1", config=config, metrics=metrics, health=health)
    loop = asyncio.ensure_future(sched.run())
    try:
        await ticks.next_call()
        clock.advance(config.interval)
        await ticks.next_call()
        ok, why = health.ready()
        assert not ok and why == "its ticks fail, retried (KeyError: 'term')"
        assert _events(caplog, "scheduler") == [
            (
                "jobs.worker.error",
                {"what": "scheduler", "worker": "s1", "code": "KeyError", "error": "'term'", "failures": 1},
            )
        ]
        assert _value(metrics, "jobs_worker_errors_total", what="scheduler", code="KeyError") == 1
    finally:
        loop.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loop


async def test_a_relay_pass_or_a_scheduler_tick_that_lost_its_connection_is_reported_as_reconnecting(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobs")
    mem, metrics = MemoryDriver(), Metrics()
    Scripted(mem, "outbox_publish_batch", [LOST, None])
    relay = Relay(mem, clock, config=RelayConfig(id="relay-1"), metrics=metrics)
    await relay.publish_pending()
    await relay.publish_pending()
    config = SchedulerConfig()
    ticks = Scripted(mem, "leader_acquire", [LOST, None])
    loop = asyncio.ensure_future(Scheduler(mem, clock, holder="s1", config=config, metrics=metrics).run())
    try:
        await ticks.next_call()
        clock.advance(config.interval)
        await ticks.next_call()
    finally:
        loop.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loop
    for what, worker in (("relay", "relay-1"), ("scheduler", "s1")):
        assert _events(caplog, what) == [
            ("jobs.worker.reconnecting", {"what": what, "worker": worker, "error": f"ConnectionLost: {LOST}"}),
            ("jobs.worker.reconnected", {"what": what, "worker": worker}),
        ]
        assert _value(metrics, "jobs_worker_reconnects_total", what=what) == 1
