"""PostgresDriver's audit log: each method runs a named statement of sql/queries/audit.sql. The
entries of the other areas' actions are written by those actions, in their own transactions
(``PostgresBase._audit``)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from engine.drivers.postgres.base import Conn, PostgresBase
from engine.drivers.sqlfiles import Q

if TYPE_CHECKING:  # built where read: a worker never loads the read side's records
    from engine.records import AuditEntry


class PostgresAudit(PostgresBase):
    async def audit_add(self, *, entry: AuditEntry) -> None:
        async with self._connection() as conn:
            await self._audit(entry, conn)

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
        p = {
            "limit": limit,
            "before": before,
            "target": target,
            "actor": actor,
            "action": action,
            "since": since,
            "scope": scope,
        }

        async def read(conn: Conn) -> list[dict[str, Any]]:
            return await self._rows(Q.audit_list, p, conn=conn)

        from engine.records import AuditEntry

        rows = await self._budgeted(budget_ms, "audit", read)
        return [
            AuditEntry(
                r["at"], r["actor"], r["action"], r["target"], r["tenant"], r["note"], dict(r["detail"]), id=r["id"]
            )
            for r in rows
        ]

    async def audit_prune(self, *, cutoff: datetime, limit: int) -> int:
        row = await self._row(Q.audit_prune, {"cutoff": cutoff, "limit": limit})
        return int(row["pruned"]) if row is not None else 0
