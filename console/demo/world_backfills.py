"""The demo world's backfills: the ledger history of the app's two sweeps (accounts.py), played
into the hour through the operations a pass itself uses (engine.testing's PassPlayer: the gates,
the ledger row, the job, a step per batch, the application's rows really swept).

In production, the world's environment:

- minute 15: alice dry-runs ``accounts_email_lower``: 60 batches of 500, two a second; it reads
  and counts and writes nothing, so the backfill stays pending in staging and in production.
- minute 31: bob starts a write pass of ``accounts_plan_tier`` (half a batch a second); a minute
  and 30 batches later he cancels it (``INC-2051: replica lag``): the ledger says cancelled. He
  then pauses the accounts queue the passes run on until the lag clears, and at minute 55 carol
  resumes it, saying why: the audit log keeps both, though the resume leaves no pause row.
- NOW - 60 s: carol starts it again; at NOW it is 30 batches in (6,000 of its 24,000 rows), its
  lease just renewed by w-app2: the pass running when the console opens. ``jobs-console demo``
  hands it to its live worker (``hand_over``), which replays the stored batches and reads on from
  the cursor, at the declared rate, for three more minutes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from engine.backfills import BackfillControl
from engine.testing import Factory, PassPlayer, claim_of

ENVIRONMENT = "production"
CANCEL_NOTE = "INC-2051: replica lag"
QUEUE = "accounts"  # the queue the app's passes run on (accounts.py)
HOLD_NOTE = "INC-2051: replica lag; no sweeps until it clears"
RESUME_NOTE = "INC-2051: replica lag under 1s again"


class BackfillStory:
    """Called once a minute of the hour (``minute``) and once at its end (``now``). ``engine``
    is the world's (its FakeClock, its driver); ``catalog`` the app's backfills (None: none)."""

    def __init__(self, engine: Any, catalog: Any, *, worker: str, ending: datetime) -> None:
        self.engine, self.catalog, self.worker, self.ending = engine, catalog, worker, ending
        self.f = Factory.of(engine)
        self.running: PassPlayer | None = None

    def control(self, actor: str) -> BackfillControl:
        return BackfillControl(self.engine, self.catalog, actor=actor, environment=ENVIRONMENT)

    async def minute(self, minute: int) -> None:
        """The story's events of this minute, from its first second; the clock is then handed
        back there, for the hour's traffic of the same minute."""
        if self.catalog is None:
            return
        back = self.f.now
        if minute == 15:
            await self._pass("alice", "accounts_email_lower", write=False, batches=None)
        elif minute == 31:
            await self._pass("bob", "accounts_plan_tier", write=True, batches=30)
            await self.control("bob").cancel("accounts_plan_tier", note=CANCEL_NOTE)
            await self.engine.operator(actor="bob").pause(QUEUE, note=HOLD_NOTE)
        elif minute == 55:
            await self.engine.operator(actor="carol").resume(QUEUE, note=RESUME_NOTE)
        elif minute == 59:
            self.running = await self._pass("carol", "accounts_plan_tier", write=True, batches=30)
        self.engine.clock.set(back)

    async def _pass(self, actor: str, name: str, *, write: bool, batches: int | None) -> PassPlayer:
        player = await PassPlayer.start(self.f, self.control(actor), name, write=write, worker=self.worker)
        if batches is None:
            await player.finish()
        else:
            await player.batches(batches)
        return player

    async def now(self) -> None:
        """At the hour's end: the running pass's worker has just renewed its lease."""
        if self.running is not None:
            await self.running.renew()


async def hand_over(engine: Any, catalog: Any) -> list[str]:
    """Hand the world's running passes back, as a draining worker hands back what it holds (I14),
    so a live worker claims each at once and resumes it at its batch. Answers their job ids."""
    f = Factory.of(engine)
    views = await BackfillControl(engine, catalog, environment=ENVIRONMENT).views()
    handed = []
    for v in views:
        if v.live_job_id is None:
            continue
        row = await f.get(v.live_job_id)
        if row.claimed_by is not None:
            await f.nack(claim_of(row), "release", run_at=f.now)
            handed.append(row.id)
    return handed
