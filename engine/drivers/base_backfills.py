"""The backfills area's protocol (engine/drivers/base.py composes it into Driver)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from engine.types import Claim

if TYPE_CHECKING:  # the read models and records named in annotations only: a worker never loads them
    from engine.projections import ActionResult
    from engine.records import BackfillRun, BackfillStatus, LivePass


class BackfillsArea(Protocol):
    """The backfill ledger (engine/drivers/*/backfills.py, sql/queries/backfills.sql, I22): one row
    per pass, never an edit of a completed one, and the live pass jobs behind the rows."""

    async def backfill_open(self, *, run: BackfillRun) -> bool:
        """Write a pass's ledger row (queued) unless its id is there; True when written."""
        ...

    async def backfill_begin(self, *, run_id: str, planned: int | None, now: datetime) -> bool:
        """Mark a pass running (a resumed one too), keeping the first count and stamping this run's
        start and the rows swept before it; False when completed."""
        ...

    async def backfill_progress(self, *, run_id: str, claim: Claim, swept: int, batches: int) -> bool:
        """Record a pass's totals, fenced on its job still held by ``claim``; False otherwise."""
        ...

    async def backfill_finish(
        self,
        *,
        run_id: str,
        outcome: BackfillStatus,
        swept: int | None,
        batches: int | None,
        error: str | None,
        now: datetime,
    ) -> bool:
        """Record a pass's outcome; False when the row is completed already (never edited)."""
        ...

    async def backfill_runs(
        self, *, names: Sequence[str] | None, environment: str | None, limit: int
    ) -> list[BackfillRun]:
        """Ledger rows, newest first (started_at, id), of ``names`` (None: all) in ``environment``."""
        ...

    async def backfill_applied(self, *, environment: str) -> list[BackfillRun]:
        """Per backfill name, its latest completed write pass in ``environment``."""
        ...

    async def backfill_live(self, *, job_names: Sequence[str]) -> list[LivePass]:
        """The live jobs of these pass job names, by name then id."""
        ...

    async def backfill_pass_resume(
        self, *, job_id: str, now: datetime, actor: str | None, note: str | None
    ) -> ActionResult | None:
        """Make a dead or cancelled pass job ready, steps kept and attempts reset, audited; a live
        holder of its key changes nothing and is named. None when no job has that id."""
        ...
