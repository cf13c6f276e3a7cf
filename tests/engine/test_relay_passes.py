"""A relay runs one pass at a time, its loop's, publish_pending's or a direct run_once's, and a burst worker with a relay
ends only when nothing was published that its last claim could have missed (engine/runtime/burst.py).

Two passes of one relay at once each skip the rows the other holds, so one could report nothing
published while the other was publishing; a burst that believed it ended with a published job
never run (run_due with relay=True, once in a loaded run of the suite).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from engine.api import Engine
from engine.clock import FakeClock
from engine.drivers.memory import MemoryDriver
from engine.jobs import job
from engine.outbox_types import OutboxRow
from engine.runtime.burst import Burst
from engine.runtime.floors import ClaimFloors
from engine.services.relay import Relay, RelayConfig
from engine.types import ClaimBatch

NOW = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
# Turns of the event loop in which a pass on the memory driver would reach its hook, were it let
# (it needs a few): what the test gives the loop's pass before it says that pass did not start.
TURNS = 50


@job(name="rp.leaf", queue="rp-q", idempotency_key=lambda inp: inp["k"])
async def leaf(ctx: Any, inp: Any) -> None:
    return None


class _Held:
    """A relay on the memory driver whose first pass stops at its claim until released."""

    def __init__(self) -> None:
        self.driver, clock = MemoryDriver(), FakeClock(NOW)
        self.eng = Engine(self.driver, clock=clock)
        self.claimed: list[list[str]] = []
        self.held, self.release = asyncio.Event(), asyncio.Event()
        self.relay = Relay(self.driver, clock, config=RelayConfig(id="rp"), hook=self._hold)

    async def _hold(self, step: str, rows: Sequence[OutboxRow]) -> None:
        if step == "claimed":
            self.claimed.append([r.input["k"] for r in rows])
            if len(self.claimed) == 1:
                self.held.set()
                await self.release.wait()

    async def stage(self, key: str) -> None:
        async with self.driver.transaction() as tx:
            await self.eng.astage(tx, leaf, {"k": key})

    async def first_pass_held(self) -> asyncio.Future[int]:
        """publish_pending, its first pass held at its claim of the row "first"."""
        await self.stage("first")
        pending = asyncio.ensure_future(self.relay.publish_pending())
        await self.held.wait()
        assert self.claimed == [["first"]]
        return pending


async def test_a_relays_loop_runs_no_pass_beside_publish_pendings_and_is_counted_in_what_it_published() -> None:
    h = _Held()
    pending = await h.first_pass_held()
    await h.stage("second")
    loop = asyncio.ensure_future(h.relay.run())
    for _ in range(TURNS):
        await asyncio.sleep(0)
    assert h.claimed == [["first"]]  # the loop's pass waits for it, rather than claiming beside it
    h.release.set()
    # The loop's pass ran next and published the second row: publish_pending counts it, since it
    # ended after the call began.
    assert await pending == 2
    assert h.claimed == [["first"], ["second"]]
    assert h.relay.published_total == 2
    await h.relay.stop()
    await loop


async def test_a_direct_run_once_waits_for_the_pass_in_flight_and_is_counted_in_what_it_published() -> None:
    h = _Held()
    pending = await h.first_pass_held()
    await h.stage("second")
    direct = asyncio.ensure_future(h.relay.run_once())  # a one-off pass: a test's, an operator's
    for _ in range(TURNS):
        await asyncio.sleep(0)
    assert h.claimed == [["first"]]  # it waits for the pass in flight
    h.release.set()
    assert len((await direct).published) == 1
    assert await pending == 2  # publish_pending counts the direct pass's row too
    assert h.claimed == [["first"], ["second"]]
    assert h.relay.published_total == 2


class _Settled:
    """An ack buffer with every ack landed."""

    settled = True

    async def settle(self) -> None:
        return None


class _Relay:
    """A relay whose loop publishes on its own; publish_pending finds nothing left."""

    def __init__(self) -> None:
        self.published_total = 0

    async def publish_pending(self) -> int:
        return 0


async def test_a_burst_claims_again_when_its_relay_published_after_its_last_claim_began() -> None:
    relay = _Relay()
    burst = Burst({}, _Settled(), asyncio.Event(), ClaimFloors(), relay)  # type: ignore[arg-type]
    nothing = ClaimBatch([], None)
    relay.published_total = 1  # the relay's loop published a row while the claim was under way
    assert not await burst.over(nothing, full=True, now=NOW)  # so the burst claims again
    assert await burst.over(nothing, full=True, now=NOW)  # that claim missed nothing: the burst is over
