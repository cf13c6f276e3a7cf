"""The outbox's operator reads beyond the view (the backlog's head, the rows the console lists with
the why of each) and the testing factory's outbox helpers, run against every driver."""

from __future__ import annotations

from typing import Any

from engine.api import Enqueue
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.introspect.base import EngineView
from engine.introspect.outbox import outbox_rows, outbox_view, outbox_why
from engine.jobs import job
from engine.testing import Factory

LEASE_MS = 10_000


@job(name="confirm_order", queue="mail", idempotency_key=lambda inp: f"order:{inp['order']}")
async def confirm_order(ctx: Any, inp: Any) -> None:
    return None


async def stage(f: Factory, *orders: int, commit: bool = True) -> list[str]:
    async with f.app_transaction(commit=commit) as tx:
        return await f.stage(tx, *(Enqueue(confirm_order, {"order": n}) for n in orders))


async def test_outbox_head_answers_the_oldest_unpublished_rows_in_stage_order(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    f = Factory(driver, ids, clock)
    first = await stage(f, 3, 2, 1)  # one transaction: one staged_at, the id breaks the tie
    clock.advance(5)
    later = await stage(f, 4)
    assert [r.id for r in await driver.outbox_head(limit=10)] == first + later
    assert [r.id for r in await driver.outbox_head(limit=2)] == first[:2]
    await f.relay("R", batch_size=2).run_once()  # publishes the two oldest
    assert [r.id for r in await driver.outbox_head(limit=10)] == first[2:] + later


async def test_outbox_rows_list_the_head_and_the_failing_rows_each_with_its_why_behind_a_failing_row(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    f = Factory(driver, ids, clock)
    staged = await stage(f, 1, 2, 3, 4, 5)
    held = await f.relay_claim("A", limit=2, lease_ms=LEASE_MS)  # rows 1 and 2, in flight
    failed = await f.relay_claim("B", limit=2, lease_ms=LEASE_MS)  # rows 3 and 4
    await f.relay_failed(failed, "X_DB: the insert timed out")
    view = EngineView(driver, clock=clock)
    v = await outbox_view(view)
    rows = await outbox_rows(view, v, limit=2)
    # The head (1, 2) and the failing row beyond it (3), in stage order; 4 and 5 are neither.
    assert [(w.id, w.status) for w in rows] == [(staged[0], "held"), (staged[1], "held"), (staged[2], "failing")]
    assert [w.text for w in rows] == [(await outbox_why(view, w.id)).text for w in rows]
    assert "X_DB: the insert timed out" in rows[2].text and rows[2].row.attempts == 1
    assert [r.id for r in held.rows] == staged[:2]
    behind = await outbox_why(view, staged[3])  # released with the failing row 3: queued behind it
    assert behind.status == "waiting" and behind.text.startswith(f"behind row {staged[2]}, whose publish has failed 1")
    fresh = await outbox_why(view, staged[4])  # never claimed, but staged after row 3 too
    assert fresh.text.startswith(f"behind row {staged[2]}") and "relays alive: A, B" in fresh.text


async def test_a_rolled_back_app_transaction_stages_nothing_and_a_committed_one_everything(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    f = Factory(driver, ids, clock)
    gone = await stage(f, 1, 2, commit=False)
    kept = await stage(f, 3)
    assert [await driver.outbox_get(id=i) for i in gone] == [None, None]
    assert [r.id for r in await driver.outbox_head(limit=10)] == kept
    res = await f.relay("R").run_once()
    assert res.published == tuple(kept)
    stats = await driver.outbox_stats(now=clock.now(), count_cap=100, limit=10, alive_since=clock.now())
    assert (stats.backlog, stats.published_last_hour) == (0, 1)
    capped = await outbox_view(EngineView(driver, clock=clock), count_cap=1)
    assert (capped.published_last_hour, capped.published_capped, capped.backlog_capped) == (1, True, False)
