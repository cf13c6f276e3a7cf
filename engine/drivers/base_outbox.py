"""The outbox area's protocol (engine/drivers/base.py composes it into Driver)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from engine.types import NewJob

if TYPE_CHECKING:  # the outbox's rows, named in annotations only: a worker that relays nothing never loads them
    from engine.outbox_types import OutboxRow, OutboxStats


class OutboxTarget(Protocol):
    """Where a stage is written: the caller's own connection (or a memory transaction), never
    the driver's pool (I16). Made by ``OutboxArea.outbox_target`` after every check has passed."""

    in_transaction: bool  # False: autocommit, nothing to join (the engine publishes directly)
    is_async: bool | None  # True: only astage() may write on it; False: only stage(); None: either

    def stage(self, *, jobs: Sequence[NewJob], now: datetime) -> None: ...

    async def astage(self, *, jobs: Sequence[NewJob], now: datetime) -> None: ...


class OutboxArea(Protocol):
    """The transactional outbox (engine/drivers/*/outbox.py, sql/queries/outbox.sql): I16-I20."""

    def outbox_target(self, tx: object) -> OutboxTarget:
        """The target a stage writes through for the caller's ``tx`` (a psycopg connection or
        cursor, sync or async, or a memory transaction). Refuses, before any statement, what this
        driver cannot join: another driver's transaction, an aborted transaction (X_INVALID_ARGUMENT)."""
        ...

    async def outbox_claim(
        self, *, relay: str, token: str, limit: int, now: datetime, lease_ms: int
    ) -> list[OutboxRow]:
        """Lease up to ``limit`` unpublished rows (free, or whose lease lapsed) to one claim in one
        step: locked and stamped with ``relay``, ``token`` and the lease's end together, handed over
        in (staged_at, id) order (I17). ``lease_ms`` is normalised by claim_lease_ms (I19)."""
        ...

    async def outbox_publish_batch(
        self, *, relay: str, token: str, limit: int, now: datetime, job_ids: Sequence[str]
    ) -> list[str] | None:
        """A whole relay pass in one step when nothing fails: up to ``limit`` claimable rows, in
        (staged_at, id) order, published as jobs under ``job_ids`` (the i-th row the i-th id) and
        stamped claimed by ``relay``/``token`` and published together (I17, I18). None, with
        nothing written, when any row cannot go as a plain insert (a live job holds its key, I2):
        the relay then takes the row-by-row path. Answers the ids published, in order."""
        ...

    async def outbox_mark_published(
        self, *, token: str, published: Sequence[tuple[str, str]], now: datetime
    ) -> list[str]:
        """Retire (row id, job id) pairs, fenced on ``token``; first writer wins (I18). Answers the
        ids retired: a claim that lapsed and was taken over retires nothing."""
        ...

    async def outbox_release(
        self, *, token: str, ids: Sequence[str], failed: str | None, error: str | None, now: datetime
    ) -> list[str]:
        """Hand back a claim's unpublished rows at once, fenced on ``token`` (I18, I20); ``failed``
        gets one more attempt and ``error``. Answers the ids released."""
        ...

    async def outbox_wait(self, *, timeout: float) -> bool:
        """Wait up to ``timeout`` real seconds for a committed stage (LISTEN); True when woken."""
        ...

    async def outbox_get(self, *, id: str) -> OutboxRow | None: ...

    async def outbox_stats(self, *, now: datetime, count_cap: int, limit: int, alive_since: datetime) -> OutboxStats:
        """Backlog (capped), its oldest row, published in the hour before ``now``, live claims and
        failing rows (``limit`` each, in stage order), relays whose heartbeat is after ``alive_since``."""
        ...

    async def outbox_head(self, *, limit: int) -> list[OutboxRow]:
        """The oldest ``limit`` unpublished rows in (staged_at, id) order: what the next claim takes."""
        ...

    async def outbox_relay_beat(self, *, relay: str, now: datetime) -> None: ...

    async def outbox_relay_gone(self, *, relay: str) -> None: ...

    async def outbox_prune(
        self, *, leader: str, holder: str, term: int, now: datetime, before: datetime, limit: int
    ) -> int:
        """Delete up to ``limit`` rows published before ``before`` (fenced on the leader's term)."""
        ...
