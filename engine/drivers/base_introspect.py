"""The read models' area protocol (engine/drivers/base.py composes it into Driver): what the
console, the CLI and engine.introspect read, each read bounded by its caller's budget."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # the read models; only named in annotations here
    from engine.projections import (
        DeadLetters,
        JobFilter,
        JobPage,
        JobSummary,
        LimitState,
        QueuePause,
        QueueStats,
        WaitGroup,
    )
    from engine.series import QueueSeries


class IntrospectArea(Protocol):
    """The read models, each read bounded by ``budget_ms``."""

    async def queue_stats(self, *, now: datetime, count_cap: int, budget_ms: int | None) -> list[QueueStats]:
        """Per queue: counts by state (each capped at count_cap: kind at-least past it; dead letters
        exact), completed in the hour before ``now`` with its per-minute series, oldest ready,
        pause. Workers zero."""
        ...

    async def queue_series(self, *, queue: str, now: datetime, budget_ms: int | None) -> QueueSeries:
        """One queue's 60 calendar minutes up to ``now``'s: completions, jobs gone dead, the wait and
        run percentiles of the completions (engine/series.py)."""
        ...

    async def job_page(
        self, *, where: JobFilter, limit: int, cursor: str | None, count_cap: int, budget_ms: int | None
    ) -> JobPage:
        """One page of the filtered list, newest first, keyset below ``cursor`` (an id)."""
        ...

    async def dead_groups(self, *, where: JobFilter, now: datetime, budget_ms: int | None) -> DeadLetters:
        """Dead letters matching ``where``, grouped by (name, error code, stop reason); every one
        counted, so their total is exact."""
        ...

    async def job_duplicate(self, *, job_id: str) -> JobSummary | None:
        """Another live row holding this job's dedupe key (I2's namespace), if any."""
        ...

    async def role_may_act(self) -> str | None:
        """None when this connection may act on jobs; else why not (a role without the writer's
        grants, a hot standby), with what would let it."""
        ...

    async def queue_get(self, *, queue: str) -> QueuePause:
        """One queue's durable pause state (not paused when it has no row)."""
        ...

    async def limit_state(self, *, keys: Sequence[str], now: datetime) -> list[LimitState]:
        """The stored slot rows and rate buckets of these limit keys (keys with neither: left out)."""
        ...

    async def queue_waits(self, *, queue: str, now: datetime, budget_ms: int | None) -> list[WaitGroup]:
        """A queue's jobs not claimable at ``now``, grouped by what they wait for (WaitGroup)."""
        ...
