"""What the Introspector and the Operator share: the engine they read through (opened once per
event loop, engine/opening.py), the tenant scope, and the one id check.

A job is named by its id, or by a fragment of it (hex digits, dashes ignored, at least
``MIN_FRAGMENT``): the head of the id or its tail (the console shows the tail, since a UUIDv7's
head is the time that jobs enqueued together share). A fragment resolves to the one job of this
tenant scope whose id begins, or else ends, with it; two or more is X_AMBIGUOUS_ID listing them,
none is the one "no job has id" error (X_NOT_FOUND). A tenant scope never sees another tenant's
job, not even as a candidate (I25).
"""

from __future__ import annotations

from typing import Any

from engine.clock import Clock, SystemClock
from engine.drivers.base import Driver
from engine.errors import X_AMBIGUOUS_ID, X_MALFORMED_ID, X_NOT_FOUND, X_TENANT_MISMATCH, JobsError
from engine.ids import parse_id
from engine.opening import ensure_open
from engine.projections import JobSummary
from engine.text import check_tenant
from engine.types import JobRow

MIN_FRAGMENT = 6  # hex digits: 16.7M values, so a tail this long is unique among millions of jobs
MAX_CANDIDATES = 10  # an ambiguous fragment lists this many matches
_HEX = frozenset("0123456789abcdef")


class EngineView:
    """Holds a driver and a clock, from an ``Engine`` (``connect(...)``) or given directly."""

    def __init__(self, engine: Any, *, clock: Clock | None = None, tenant: str | None = None) -> None:
        self.driver: Driver = getattr(engine, "driver", engine)
        self.clock: Clock = clock or getattr(engine, "clock", None) or SystemClock()
        check_tenant(tenant)
        self.tenant = tenant  # a scope: every read and action sees this tenant's jobs only (I25)

    async def _open(self) -> None:
        await ensure_open(self.driver)

    def _tenant(self, tenant: str | None) -> str | None:
        check_tenant(tenant)
        if self.tenant is not None and tenant is not None and tenant != self.tenant:
            raise JobsError(
                X_TENANT_MISMATCH,
                cause=f"tenant {tenant!r} is outside this scope ({self.tenant!r})",
                fix=f"--tenant {self.tenant}",
            )
        return tenant if tenant is not None else self.tenant


def id_fragment(value: Any) -> str:
    """A full id's canonical form, or a fragment's hex digits (lower case, no dashes); anything
    else is X_MALFORMED_ID, before any query runs."""
    jid = parse_id(value) if isinstance(value, str) else None
    if jid is not None:
        return jid
    digits = value.strip().replace("-", "").lower() if isinstance(value, str) else ""
    if len(digits) < MIN_FRAGMENT or len(digits) > 32 or not set(digits) <= _HEX:
        raise JobsError(
            X_MALFORMED_ID,
            cause=f"{value!r} is not a job id: a UUID, or at least {MIN_FRAGMENT} hex digits of its head or tail",
            fix="jobsctl ls --json",
        )
    return digits


def not_found(job_id: str, tenant: str | None) -> JobsError:
    who = f" for tenant {tenant!r}" if tenant is not None else ""
    return JobsError(X_NOT_FOUND, cause=f"no job has id {job_id}{who}", fix="jobsctl ls --json")


def ambiguous(fragment: str, found: list[JobSummary]) -> JobsError:
    listed = found[:MAX_CANDIDATES]
    many = str(len(found)) if len(found) <= MAX_CANDIDATES else f"more than {MAX_CANDIDATES}"
    shown = "; ".join(f"{j.id} ({j.name}, {j.state.value})" for j in listed)
    return JobsError(
        X_AMBIGUOUS_ID,
        cause=f"{fragment!r} is part of the ids of {many} jobs: {shown}",
        fix=f"jobsctl show {listed[0].id}",
        meta={"candidates": [j.id for j in listed]},
    )


async def resolve_id(view: EngineView, value: Any, tenant: str | None, *, budget_ms: int | None = None) -> str:
    """The full id ``value`` names: itself when it is a UUID, else the one job of ``tenant``
    (None: any) whose id begins, or else ends, with the fragment."""
    frag = id_fragment(value)
    if len(frag) == 36:  # a canonical UUID: no lookup
        return frag
    await view._open()
    found = await view.driver.job_find(fragment=frag, tenant=tenant, limit=MAX_CANDIDATES + 1, budget_ms=budget_ms)
    if not found:
        raise not_found(value.strip(), tenant)
    if len(found) > 1:
        raise ambiguous(value.strip(), list(found))
    return found[0].id


async def load_job(view: EngineView, value: Any, tenant: str | None, *, budget_ms: int | None = None) -> JobRow:
    """The row ``value`` names, or X_MALFORMED_ID / X_AMBIGUOUS_ID / X_NOT_FOUND; a row of another
    tenant is not found (I25)."""
    jid = await resolve_id(view, value, tenant, budget_ms=budget_ms)
    await view._open()
    row = await view.driver.job_get(job_id=jid)
    if row is None or (tenant is not None and row.tenant != tenant):
        raise await gone_error(view, jid, tenant) if row is None else not_found(jid, tenant)
    return row


async def gone_error(view: EngineView, job_id: str, tenant: str | None) -> JobsError:
    """X_NOT_FOUND, saying who discarded the job when a `discarded` entry outlived its row (and
    only to a scope that may see that job, I25)."""
    err = not_found(job_id, tenant)
    gone = next((h for h in await view.driver.job_history(job_id=job_id) if h.kind == "discarded"), None)
    if gone is None or (tenant is not None and gone.data.get("tenant") != tenant):
        return err
    return JobsError(
        X_NOT_FOUND,
        cause=f"{err.cause}: it was discarded by {gone.actor or 'someone'} at {gone.at:%Y-%m-%d %H:%M:%S %Z}"
        + (f" ({gone.note})" if gone.note else ""),
        fix=err.fix,
    )
