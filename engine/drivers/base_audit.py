"""The audit log area's protocol (engine/drivers/base.py composes it into Driver)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # only named in annotations here
    from engine.records import AuditEntry


class AuditArea(Protocol):
    """The audit log (engine/audit.py; engine/drivers/*/audit.py, sql/queries/audit.sql). Each
    action of the other areas that changed something writes its own entry in the transaction of
    its change; ``audit_add`` is for an entry of its own (a bulk run's summary)."""

    async def audit_add(self, *, entry: AuditEntry) -> None:
        """Write ``entry`` (its ``id`` is the database's)."""
        ...

    async def audit_list(
        self,
        *,
        limit: int,
        before: int | None,
        target: str | None,
        actor: str | None,
        action: str | None,
        since: datetime | None,
        scope: str | None,
        budget_ms: int | None,
    ) -> list[AuditEntry]:
        """Up to ``limit`` entries newest first (by time, then id), older than the entry ``before``
        (by id alone when it was pruned), each filter optional;
        ``scope``: only the entries of that tenant (a tenant-scoped reader never sees the fleet's)."""
        ...

    async def audit_prune(self, *, cutoff: datetime, limit: int) -> int:
        """Delete at most ``limit`` entries written before ``cutoff``, oldest first; how many went."""
        ...
