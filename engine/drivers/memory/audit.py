"""MemoryDriver's audit log: the same meaning as sql/queries/audit.sql. The other areas' actions
append their entries under the state's lock, with the change they record (``MemoryState.add_audit``)."""

from __future__ import annotations

from datetime import datetime

from engine.drivers.memory.state import MemoryBase
from engine.records import AuditEntry


class MemoryAudit(MemoryBase):
    async def audit_add(self, *, entry: AuditEntry) -> None:
        with self.state.lock:
            self.state.add_audit(entry)

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
        out: list[AuditEntry] = []
        with self.state.lock:
            mark = next(((e.at, e.id or 0) for e in self.state.audit if e.id == before), None)
            for e in sorted(self.state.audit, key=lambda e: (e.at, e.id or 0), reverse=True):
                if len(out) >= limit:
                    break
                if (
                    (before is None or ((e.at, e.id or 0) < mark if mark else (e.id or 0) < before))
                    and (target is None or e.target == target)
                    and (actor is None or e.actor == actor)
                    and (action is None or e.action == action)
                    and (since is None or e.at >= since)
                    and (scope is None or e.tenant == scope)
                ):
                    out.append(e)
        return out

    async def audit_prune(self, *, cutoff: datetime, limit: int) -> int:
        with self.state.lock:
            old = sorted((e for e in self.state.audit if e.at < cutoff), key=lambda e: e.at)[:limit]
            gone = {e.id for e in old}
            self.state.audit = [e for e in self.state.audit if e.id not in gone]
        return len(gone)
