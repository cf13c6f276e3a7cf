"""Two starts of one backfill racing past the gate read: the one whose enqueue dedupes onto the
other's pass is refused as X_BACKFILL_RUNNING naming that pass, on every driver, and writes no
ledger row of its own."""

from __future__ import annotations

from typing import Any

import pytest

from engine.api import Engine
from engine.backfills import BackfillControl, Backfills, Batch
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import JobsError
from engine.ids import IdFactory

NAME = "flags"


async def test_a_start_that_loses_the_race_to_another_is_refused_as_running(
    driver: Driver, clock: FakeClock, ids: IdFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    bf = Backfills(version="1")

    @bf.backfill(NAME, source=lambda conn, after, size: ([], after), count=lambda conn: 0)
    def flags(batch: Batch) -> None:
        pass

    ctl = BackfillControl(Engine(driver, clock=clock, ids=ids), bf, environment="production", actor="ci")
    first = await ctl.start(NAME, write=True)

    async def no_gate(*args: Any, **kwargs: Any) -> None:  # the second start read the gates before the first wrote
        return None

    monkeypatch.setattr(ctl, "gate", no_gate)
    with pytest.raises(JobsError) as exc:
        await ctl.start(NAME, write=True)
    assert exc.value.code == "X_BACKFILL_RUNNING" and exc.value.fix == f"jobsctl show {first.job_id}"
    assert [r.job_id for r in await ctl.history(NAME)] == [first.job_id]
