"""A staged job exists from its stage, not from its publication, on every driver and both relay
paths: an event sent after the staging transaction committed and before a relay published the
job is taken by the job's wait (the README: an event sent before the wait is reached is not lost).
The torture run found it: a wait published a moment after its event never woke."""

from __future__ import annotations

from typing import Any

import pytest

from engine.api import Engine, Enqueue
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.jobs import job
from engine.runtime.steps import StepApi
from engine.services.relay import Relay, RelayConfig
from engine.types import JobRow, JobState
from tests.contract.test_outbox import app_tx
from tests.contract.test_steps_harness import QUEUE, attempt, get


@job(name="outbox.waits", queue=QUEUE, idempotency_key=lambda inp: f"order:{inp['order']}")
async def waits(ctx: Any, inp: Any) -> Any:
    return None


async def _hold(stage: str, rows: Any) -> None:  # a hook: the relay takes its claim/publish/mark path
    return None


@pytest.mark.parametrize("rows", [1, 3])  # the single insert's statement, and the batch's
@pytest.mark.parametrize("path", ["one statement", "claim, publish, mark"])
async def test_an_event_sent_between_a_stage_and_its_publication_is_taken(
    driver: Driver, clock: FakeClock, ids: IdFactory, path: str, rows: int
) -> None:
    eng = Engine(driver, clock=clock, ids=ids)
    async with app_tx(driver) as tx:
        staged, *others = await eng.astage_many(tx, [Enqueue(waits, {"order": 42 + n}) for n in range(rows)])
    staged_at = clock.now()
    clock.advance(2)
    await eng.asend_event("order.paid", {"order": 42})  # the job is certain: its stage committed
    clock.advance(3)
    hook = _hold if path != "one statement" else None
    relay = Relay(driver, clock, config=RelayConfig(id="r1"), hook=hook)
    assert (await relay.run_once()).published == (staged.id, *(o.id for o in others))
    published = await driver.outbox_get(id=staged.id)
    assert published is not None and published.job_id is not None
    for s in (staged, *others):  # every job of the batch exists from its stage
        out = await driver.outbox_get(id=s.id)
        assert out is not None and out.job_id is not None
        assert (await get(driver, out.job_id)).created_at == staged_at

    async def handler(step: StepApi, r: JobRow) -> Any:
        return await step.wait_for_event("paid", event="order.paid", match={"order": 42}, timeout=60)

    done = await attempt(driver, clock, handler)  # the staged job first (claim order: run_at, id)
    assert done.kind == "completed" and done.result == {"order": 42}
    assert (await get(driver, published.job_id)).state is JobState.COMPLETED
