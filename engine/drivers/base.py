"""The Driver protocol: the one seam between the engine and storage.

Noun first, keyword-only, frozen dataclasses back (never dicts). Both drivers implement every
member with the same meaning; the contract suite checks the members by reflection and runs the
same behaviour tests against each.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from engine.types import (
    Ack,
    AttemptRecord,
    CancelResult,
    Claim,
    ClaimedJob,
    EnqueueResult,
    EventRecord,
    HistoryEntry,
    JobRow,
    Nack,
    NewJob,
    Renewal,
    SentEvent,
    StepRecord,
    StepRetry,
    StoredStep,
)


@runtime_checkable
class Driver(Protocol):
    """Storage for jobs. Every time-comparing call takes ``now`` from the engine's clock."""

    kind: str  # "memory" | "postgres"

    async def open(self) -> None:
        """Connect and check the schema (X_SCHEMA_MISSING names `jobs install`)."""
        ...

    async def close(self) -> None: ...

    async def job_enqueue(self, *, jobs: Sequence[NewJob], now: datetime) -> list[EnqueueResult]:
        """Insert a batch (one round trip). A live row holding (name, tenant or '', key) answers
        as deduped with ITS id; never another tenant's or another job name's row (I2)."""
        ...

    async def job_claim(
        self, *, queues: Sequence[str], limit: int, worker: str, now: datetime, lease_seconds: float
    ) -> list[ClaimedJob]:
        """Lease up to ``limit`` due rows of unpaused ``queues`` to ``worker``, in priority, run_at,
        id order. Each claim burns one attempt (a later park/suspend/release hands it back)."""
        ...

    async def job_ack_many(self, *, acks: Sequence[Ack], now: datetime) -> list[str]:
        """Complete claims; answers the ids that landed. A stale claimant's ack is refused (I15)."""
        ...

    async def job_nack(self, *, nack: Nack, now: datetime) -> bool:
        """Hand a claim back; False when the claimant no longer holds the row (I15)."""
        ...

    async def job_renew_many(
        self, *, claims: Sequence[Claim], now: datetime, lease_seconds: float
    ) -> list[Renewal]:
        """Extend leases; per claim ok | cancelled (an operator cancelled it) | lost."""
        ...

    async def job_cancel(
        self, *, job_id: str, tenant: str | None, now: datetime, actor: str | None, note: str | None = None
    ) -> CancelResult | None:
        """Cancel a live job. None when no job has that id for that tenant (I25)."""
        ...

    async def job_get(self, *, job_id: str) -> JobRow | None: ...

    async def job_history(self, *, job_id: str) -> list[HistoryEntry]: ...

    async def job_attempts(self, *, job_id: str) -> list[AttemptRecord]: ...

    # --- durable steps and events (engine/drivers/*/steps.py) ----------------------------------

    async def step_load(self, *, job_id: str) -> list[StoredStep]:
        """Every stored step of a job with its result, in seq order: what a replay answers from."""
        ...

    async def step_save(self, *, claim: Claim, step: StoredStep) -> bool:
        """Upsert one step by (job, name), fenced on the claim (running, claimed_by + run); False
        when the claimant no longer holds the row: a stale run never writes (I10, I15)."""
        ...

    async def step_list(self, *, job_id: str) -> list[StepRecord]:
        """A job's step trace in seq order (no results, their sizes only)."""
        ...

    async def event_send(
        self, *, id: str, name: str, payload: dict[str, Any], tenant: str | None, actor: str | None, now: datetime
    ) -> SentEvent:
        """Store a durable event and make the suspended waits it matches claimable at ``now``."""
        ...

    async def event_find(
        self, *, job_id: str, name: str, tenant: str | None, match: dict[str, Any], since: datetime, now: datetime
    ) -> EventRecord | None:
        """The earliest event of ``name`` and ``tenant`` whose payload contains ``match`` (jsonb @>),
        sent in [since, now], that no step of the job has taken."""
        ...

    async def job_retry_from_step(
        self, *, job_id: str, step_name: str, tenant: str | None, now: datetime, actor: str | None, note: str | None = None
    ) -> StepRetry:
        """Re-run a dead or completed job from ``step_name``: drop that step's and later steps'
        results (by seq), reset it to ready with attempts reset, record who. Refusals change nothing."""
        ...
