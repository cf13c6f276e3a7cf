"""The audit log, read: what operators did, newest first (engine/audit.py). A tenant-scoped
operator reads only the entries of its tenant (I25): the fleet's actions (a queue paused, a
worker drained) act on every tenant's work and are not its to read."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from engine.actions.base import OperatorBase
from engine.audit import LONGEST_PAGE, PAGE, check_action
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.text import check_text

if TYPE_CHECKING:
    from engine.records import AuditEntry


class AuditReads(OperatorBase):
    async def audit(
        self,
        *,
        limit: int = PAGE,
        before: int | None = None,
        target: str | None = None,
        actor: str | None = None,
        action: str | None = None,
        since: datetime | None = None,
    ) -> list[AuditEntry]:
        """Up to ``limit`` entries newest first (by time, then id), older than the entry ``before``
        (the last entry's id of the page before), each filter optional: ``target`` (a queue, a job id, a worker, a task, a
        backfill), ``actor``, ``action`` (engine.audit.ACTIONS), ``since`` (an aware datetime)."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= LONGEST_PAGE:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"limit={limit!r} must be a whole number from 1 to {LONGEST_PAGE}",
                fix=f"jobsctl audit --limit {PAGE}",
            )
        if before is not None and (isinstance(before, bool) or not isinstance(before, int) or before < 1):
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"before={before!r} must be an entry's id (a whole number >= 1)",
                fix="jobsctl audit --before 120",
            )
        if since is not None and (not isinstance(since, datetime) or since.tzinfo is None):
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"since={since!r} must be a datetime with its time zone",
                fix="jobsctl audit --since 1h",
            )
        for name, value, fix in (
            ("target", target, "jobsctl audit --target NAME"),
            ("actor", actor, "jobsctl audit --actor NAME"),
        ):
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise JobsError(
                    X_INVALID_ARGUMENT, cause=f"{name}={value!r} must be a non-empty str (None: any {name})", fix=fix
                )
            check_text(value, what=name, fix=fix)
        await self._open()
        return await self.driver.audit_list(
            limit=limit,
            before=before,
            target=target.strip() if target is not None else None,
            actor=actor.strip() if actor is not None else None,
            action=check_action(action),
            since=since,
            scope=self.tenant,
            budget_ms=self.budget_ms,
        )
