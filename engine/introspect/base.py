"""What the Introspector and the Operator share: the engine they read through, opened once per
event loop, the tenant scope, and the checked id."""

from __future__ import annotations

import asyncio
from typing import Any

from engine.clock import Clock, SystemClock
from engine.drivers.base import Driver
from engine.errors import X_MALFORMED_ID, X_NOT_FOUND, JobsError
from engine.ids import parse_id
from engine.types import JobRow


class EngineView:
    """Holds a driver and a clock, from an ``Engine`` (``connect(...)``) or given directly."""

    def __init__(self, engine: Any, *, clock: Clock | None = None, tenant: str | None = None) -> None:
        self.driver: Driver = getattr(engine, "driver", engine)
        self.clock: Clock = clock or getattr(engine, "clock", None) or SystemClock()
        self.tenant = tenant  # a scope: every read and action sees this tenant's jobs only (I25)
        self._opened: set[int] = set()

    async def _open(self) -> None:
        loop = id(asyncio.get_running_loop())
        if loop not in self._opened:
            await self.driver.open()
            self._opened.add(loop)

    def _tenant(self, tenant: str | None) -> str | None:
        if self.tenant is not None and tenant is not None and tenant != self.tenant:
            from engine.errors import X_TENANT_MISMATCH

            raise JobsError(
                X_TENANT_MISMATCH,
                cause=f"tenant {tenant!r} is outside this scope ({self.tenant!r})",
                fix=f"--tenant {self.tenant}",
            )
        return tenant if tenant is not None else self.tenant


def job_id_of(value: str) -> str:
    jid = parse_id(value)
    if jid is None:
        raise JobsError(X_MALFORMED_ID, cause=f"{value!r} is not a job id (a UUID)", fix="jobs ls --json")
    return jid


def not_found(job_id: str, tenant: str | None) -> JobsError:
    who = f" for tenant {tenant!r}" if tenant is not None else ""
    return JobsError(X_NOT_FOUND, cause=f"no job has id {job_id}{who}", fix="jobs ls --json")


async def load_job(view: EngineView, job_id: str, tenant: str | None) -> JobRow:
    """The row, or X_MALFORMED_ID / X_NOT_FOUND; a row of another tenant is not found (I25)."""
    jid = job_id_of(job_id)
    await view._open()
    row = await view.driver.job_get(job_id=jid)
    if row is None or (tenant is not None and row.tenant != tenant):
        raise not_found(jid, tenant)
    return row
