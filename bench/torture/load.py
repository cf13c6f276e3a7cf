"""What the torture run enqueues: a steady mix of every kind of job, events for the waiting ones,
and stages through the outbox in transactions that commit or roll back.

Every enqueue carries a unique key (its idempotency key too) and a marker that must never reach a
log. A call that failed (the server restarting) is retried with the same key until it lands: the
idempotency key makes the retry safe, and a key whose first call committed unseen is found by
the checks all the same (they go by key).
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from typing import Any

import psycopg

from bench.torture import app
from bench.torture.sqlq import sql
from engine.api import Engine

MARKER = "card-4242-torture-never-logged"
# kind -> weight in the mix. "staged" and "staged-wait" go through the outbox; a third of the
# staging transactions roll back.
MIX: dict[str, int] = {
    "plain": 26,
    "steps": 14,
    "sleep": 7,
    "slow": 8,
    "wait": 9,
    "terminal": 4,
    "later": 5,
    "busy": 5,
    "unclassified": 4,
    "staged": 12,
    "staged-wait": 6,
    "fanin": 4,
    "doomed": 3,
    "revived": 3,
}
HANDLES = {
    "plain": app.plain,
    "steps": app.steps,
    "sleep": app.sleeper,
    "slow": app.slow,
    "wait": app.waiter,
    "terminal": app.terminal,
    "later": app.later,
    "busy": app.busy,
    "unclassified": app.unclassified,
    "staged": app.staged,
    "staged-wait": app.waiter,
    "fanin": app.fanin,
    "doomed": app.doomed,
    "revived": app.revived,
}
ROLLBACK_SHARE = 1 / 3
RETRY_PAUSE = 0.2


@dataclass
class Sent:
    key: str
    kind: str
    at: float  # monotonic, when first tried
    committed: bool | None = None  # None: unknown (the commit's answer was lost)
    rolled_back: bool = False
    event_at: float | None = None  # a waiting job's event: when it is due to be sent
    event_sent: bool = False
    tries: int = 0
    job_id: str | None = None
    cancel_at: float | None = None  # a doomed fan-in: when it is cancelled with its children
    cancelled: bool = False
    revive: bool = False  # a revived fan-in: retried with its children once it is dead
    revived: bool = False  # its retry landed
    completed_alone: bool = False  # it completed without one (its flaky child's first run was lost)
    look_at: float = 0.0  # when its state is read next


@dataclass
class Producer:
    eng: Engine
    app_dsn: str  # the staging transactions run as the application
    rate: float  # enqueues a second
    total: int | None = None  # stop after this many (None: until stopped)
    seed: int = 1
    sent: dict[str, Sent] = field(default_factory=dict)
    errors: int = 0  # calls that failed and were retried
    _stop: bool = False

    def stop(self) -> None:
        self._stop = True

    async def run(self) -> None:
        rng = random.Random(self.seed)
        kinds, weights = zip(*MIX.items())
        start, n = time.monotonic(), 0
        events = asyncio.ensure_future(self._events())
        try:
            while not self._stop and (self.total is None or n < self.total):
                due = start + n / self.rate
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                kind = rng.choices(kinds, weights)[0]
                await self.one(kind, n, rng)
                n += 1
        finally:
            events.cancel()
            await asyncio.gather(events, return_exceptions=True)

    async def one(self, kind: str, n: int, rng: random.Random) -> None:
        key = f"{kind}-{self.seed}-{n}"
        s = Sent(key, kind, time.monotonic())
        self.sent[key] = s
        inp: dict[str, Any] = {"k": key, "card": MARKER}
        if kind == "sleep":
            inp["nap"] = round(rng.uniform(0.5, 2.0), 2)
        if kind == "slow":
            inp["secs"] = round(rng.uniform(0.5, 2.5), 2)
        if kind.startswith("staged"):
            s.rolled_back = rng.random() < ROLLBACK_SHARE
            await self._stage(s, inp)
        else:
            await self._enqueue(s, inp)
        if kind == "doomed":  # before it runs, while it fans out, or while its children run
            s.cancel_at = time.monotonic() + rng.uniform(0.0, 3.0)
        s.revive = kind == "revived"
        if kind in ("wait", "staged-wait") and not s.rolled_back:
            # After the enqueue or the stage committed (an event from before the job is not its
            # event), and often before the worker reaches the wait.
            s.event_at = time.monotonic() + rng.uniform(0.0, 3.0)

    async def _enqueue(self, s: Sent, inp: dict[str, Any]) -> None:
        while True:
            s.tries += 1
            try:
                s.job_id = (await self.eng.aenqueue(HANDLES[s.kind], inp)).id
                s.committed = True
                return
            except Exception:
                self.errors += 1
                await asyncio.sleep(RETRY_PAUSE)

    async def _stage(self, s: Sent, inp: dict[str, Any]) -> None:
        """The application's order and its job in one transaction, committed or rolled back. A
        transaction that failed before its commit is tried again; one whose commit's answer was
        lost is left unknown (the order row, written in it, says later)."""
        while True:
            s.tries += 1
            committing = False
            try:
                async with await psycopg.AsyncConnection.connect(
                    self.app_dsn, connect_timeout=5, application_name="torture-stage"
                ) as conn:
                    async with conn.transaction(force_rollback=s.rolled_back):
                        await conn.execute(sql("torture_order"), {"key": s.key})  # type: ignore[arg-type]
                        await self.eng.astage(conn, HANDLES[s.kind], inp)
                        committing = not s.rolled_back
                s.committed = not s.rolled_back
                return
            except Exception:
                self.errors += 1
                if committing:
                    s.committed = None
                    return
                await asyncio.sleep(RETRY_PAUSE)

    async def _events(self) -> None:
        while True:
            await asyncio.sleep(0.05)
            await self.send_due(time.monotonic())

    async def send_due(self, now: float) -> None:
        """The events and the cancels due by ``now``; one that fails goes again at the next pass."""
        for s in list(self.sent.values()):
            if s.event_at is not None and not s.event_sent and s.event_at <= now:
                try:
                    await self.eng.asend_event(app.EVENT, {"k": s.key}, actor="torture")
                except Exception:
                    self.errors += 1
                    continue
                s.event_sent = True
            if s.cancel_at is not None and not s.cancelled and s.cancel_at <= now and s.job_id is not None:
                try:
                    await self.eng.operator(actor="torture").cancel(s.job_id, children=True, note="doomed")
                except Exception:
                    self.errors += 1
                    continue
                s.cancelled = True
            if s.revive and not (s.revived or s.completed_alone) and s.job_id is not None and s.look_at <= now:
                await self._revive(s)

    async def _revive(self, s: Sent) -> None:
        """Retry a dead revived fan-in with its children, as an operator would; one that failed
        (a fault on the way, maybe halfway) is tried again at a later pass."""
        s.look_at = time.monotonic() + 0.5
        try:
            state = (await self.eng.aget(s.job_id)).state.value  # type: ignore[arg-type]
            if state == "completed":
                s.completed_alone = True
            elif state == "dead":
                await self.eng.operator(actor="torture").retry(s.job_id, children=True, note="revived")  # type: ignore[arg-type]
                s.revived = True
        except Exception:
            self.errors += 1

    def _owed(self) -> bool:
        return any(
            (s.event_at is not None and not s.event_sent)
            or (s.cancel_at is not None and not s.cancelled)
            or (s.revive and not (s.revived or s.completed_alone))
            for s in self.sent.values()
        )

    async def send_all(self) -> None:
        """The end: every event and cancel not yet sent, now (retried until each lands)."""
        while self._owed():
            await self.send_due(float("inf"))
            await asyncio.sleep(0.05)
