"""The demo shop's checkout, through the transactional outbox: the order's receipt is staged in the
app's own transaction, so the receipt job exists exactly when the order does.

A checkout in four is rolled back (its payment form failed after the stage) and leaves no trace:
no outbox row, no job. ``checkouts`` is the one sequence both pictures use: the seeded world plays
it onto its hour (``play_outbox``), and `jobs-console demo` stages the next one at every beat of
its traffic (``checkout``), on a psycopg connection of its own to the demo's database.

The world's hour: the relays of the two app workers publish each committed checkout at once, and
app1 sends the receipt. For the last three minutes one receipt (the ``POISONED`` order's) fails to
publish at every pass: a session that enqueued the same receipt directly sits idle in its
transaction, holding the key, so the relay's insert waits until the statement timeout (5 s)
cancels it. Each pass claims that row first, with the rows released beside it: they wait behind
it (I20), while what commits during a pass is published by the other relay. NOW falls just after
app1 handed its batch back, while app2 holds a row whose key the same session holds.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from console.demo.jobs import send_receipt
from engine import Enqueue, FakeClock
from engine.testing import Factory

TENANTS = ("acme", "globex", "initech", "umbrella")
RELAYS = ("relay:app1:4242:5e1f", "relay:app2:5151:9c0d")  # the relays of the world's two app workers
TIMEOUT = "QueryCanceled: canceling statement due to statement timeout"
PASS_TAKES, PASS_EVERY = 5.0, 6.0  # a failing pass: the statement timeout, then the next poll
PASSES = 27  # odd: app1 makes the last one
FIRST_ORDER, LIVE_FIRST_ORDER = 50_001, 60_001  # the world's orders, then the live demo's


@dataclass(frozen=True)
class Checkout:
    order: str
    tenant: str
    commit: bool

    def receipt(self) -> Enqueue:
        n = self.order.removeprefix("ord-")
        return Enqueue(send_receipt, {"order": self.order, "email": f"buyer{n}@demo.example"}, tenant=self.tenant)


def checkouts(seed: int = 7, *, first: int = FIRST_ORDER) -> Iterator[Checkout]:
    """The shop's checkouts, in order: the same seed gives the same orders and the same rollbacks."""
    rng = random.Random(seed * 7919 + first)
    for n in itertools.count(first):
        yield Checkout(f"ord-{n}", rng.choice(TENANTS), rng.random() >= 0.25)


async def checkout(f: Factory, c: Checkout) -> list[str]:
    """One checkout: the receipt staged in the app's own transaction, committed or rolled back."""
    async with f.app_transaction(commit=c.commit) as tx:
        staged = await f.stage(tx, c.receipt())
    return staged if c.commit else []


async def play_outbox(f: Factory, now: datetime, *, worker: str, seed: int = 7) -> None:
    """The checkouts of the hour ending at ``now`` (the clock ends there); ``worker`` sends the
    receipts published."""
    clock = f.clock
    assert isinstance(clock, FakeClock)
    rng = random.Random(seed)
    orders = checkouts(seed)
    relays = [f.relay(r) for r in RELAYS]
    first_pass = now - timedelta(seconds=PASS_EVERY * (PASSES - 1) + PASS_TAKES + 0.3)

    async def publish(relay: Any) -> None:
        res = await relay.run_once()
        for oid in res.published:  # app1 sends each receipt as soon as it is a job
            row = await f.driver.outbox_get(id=oid)
            assert row is not None and row.job_id is not None
            claim = await f.claim(row.job_id, worker)
            f.advance(0.6)
            await f.complete(claim, result={"html_bytes": 18234, "sent": True})

    at = now - timedelta(minutes=56)
    while at < first_pass - timedelta(minutes=1):
        clock.set(at)
        if await checkout(f, next(orders)):
            f.advance(0.05)
            await publish(relays[rng.randrange(2)])
        at += timedelta(seconds=rng.uniform(60, 150))
    clock.set(first_pass - timedelta(seconds=0.2))
    poisoned = next(c for c in orders if c.commit)
    await checkout(f, poisoned)
    # Offsets into a pass: during it (the other relay publishes what commits), or in the second
    # between two passes (it waits, and the next pass claims it behind the poisoned row). What is
    # published here is sent 95 s before NOW or earlier: the newest receipt job stays the dead one
    # the job detail snapshots and screenshots open (`name=send_receipt`, the first row).
    during = {10: 3.2, 6: 1.0, 3: 2.0}
    between = {20: 5.5, 8: 5.4, 2: 5.6}
    for k in range(PASSES):
        start = first_pass + timedelta(seconds=PASS_EVERY * k)
        clock.set(start)
        held = await f.relay_claim(RELAYS[k % 2])
        if k in during:
            clock.set(start + timedelta(seconds=during[k]))
            if await checkout(f, next(orders)):
                await publish(relays[(k + 1) % 2])
        if k == PASSES - 1:  # a row whose key the idle session holds too: app2 holds it, waiting
            clock.set(start + timedelta(seconds=1.8))
            await checkout(f, next(c for c in orders if c.commit))
            f.advance(0.5)
            await f.relay_claim(RELAYS[1])
        clock.set(start + timedelta(seconds=PASS_TAKES))
        await f.relay_failed(held, TIMEOUT)
        if k in between:
            clock.set(start + timedelta(seconds=between[k]))
            await checkout(f, next(orders))
    clock.set(now)
