"""I13, the clock a renewal is measured by: the database measures a renewed lease from the
``now`` the renewal was sent with, so the worker measures it from the same instant. A renewal
that answers late must not make the worker believe it holds the row longer than the database
says: past that, another worker may claim the row and the run would be duplicated."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from engine.clock import FakeClock
from engine.drivers.memory import MemoryDriver
from engine.runtime.leases import LeaseKeeper
from engine.runtime.metrics import Metrics
from engine.types import Claim, Renewal


async def test_i13_a_late_answered_renewal_is_measured_from_when_it_was_sent(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobs")
    mem = MemoryDriver()
    keeper = LeaseKeeper(mem, clock, worker="w1", lease_seconds=30, interval=10, metrics=Metrics())
    calls = 0

    async def slow_then_gone(**kw: Any) -> list[Renewal]:
        nonlocal calls
        calls += 1
        if calls == 1:
            clock.advance(9)  # sent at t=10, answered at t=19 (within the round's deadline of 10 s)
            return [Renewal(c, "ok") for c in kw["claims"]]
        raise ConnectionError("the database went away")

    mem.job_renew_many = slow_then_gone  # type: ignore[method-assign]
    lease = keeper.hold(Claim("j1", "w1", 1), "q", "x.ok")
    aborted: list[str] = []
    lease.abort = aborted.append
    clock.advance(10)
    await keeper.renew_once()  # the database renewed the lease until t=10+30
    clock.advance(20)
    await keeper.renew_once()  # t=39: fails, still within 30 s of t=10
    assert aborted == []
    clock.advance(1)
    await keeper.renew_once()  # t=40: the database's lease has lapsed, so this run lost it
    assert aborted == ["lease-lost"]
    assert [r.getMessage() for r in caplog.records].count("jobs.lease.lost") == 1
