"""Per-job limits, enforced fleet-wide before a handler starts: `concurrency` through durable
slots (jobs.slot, so two worker processes share one limit) and `rate_limit` through token buckets
(jobs.rate_bucket), global or per key. A job over a limit is SHED: parked, no attempt burned, no
last error (I8); the worker's one `shed()` path settles it.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.clock import Clock
from engine.drivers.base import Driver
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.jobs import JobDefinition
from engine.runtime.leases import Lease
from engine.text import MAX_KEY_BYTES, check_text, storable
from engine.types import JobRow


@dataclass(frozen=True)
class Shed:
    limit: str  # "concurrency" | "rate"
    key: str
    wait: float  # seconds until the limit may admit it


def concurrency_key(d: JobDefinition) -> str:
    return f"concurrency:{d.name}"


class RateKeyFailed(JobsError):
    """The job's ``RateLimit.key`` raised on this job's input, or answered what cannot name a
    bucket: this attempt's failure (terminal, as X_INVALID_ARGUMENT is: the same input fails the
    same way), not a run that never settles."""


def rate_key(d: JobDefinition, row: JobRow) -> str:
    """The bucket a run of ``d`` takes its token from: the job's own, or with a key function the
    job's bucket for what it answers. The answer must be text PostgreSQL can store in at most
    MAX_KEY_BYTES: anything else (None, a number, a dict) fails the attempt, as a key that raises
    does, so 42 and '42' never share a bucket by accident and both drivers refuse the same keys."""
    rate = d.rate_limit
    assert rate is not None
    if rate.key is None:
        return f"rate:{d.name}"
    try:
        part = rate.key(row.input, row.tenant)
    except Exception as exc:
        raise RateKeyFailed(
            X_INVALID_ARGUMENT,
            cause=f"the rate_limit key of job {d.name!r} raised on this job's input: {type(exc).__name__}: {exc}",
            fix=f"make the RateLimit key of {d.name!r} answer for every input it is enqueued with",
        ) from exc
    declared = f"RateLimit(limit={rate.limit}, per={rate.per!r}, key=lambda inp, tenant: "
    if not isinstance(part, str):
        try:
            shown = storable(repr(part))
        except Exception:  # the answer's own __repr__ failed: its type still says what it was
            shown = "a value"
        shown = shown if len(shown) <= 60 else shown[:60] + "..."
        raise RateKeyFailed(
            X_INVALID_ARGUMENT,
            cause=f"the rate_limit key of job {d.name!r} returned {shown} ({type(part).__name__}) on this job's "
            "input, not a string: a key names its bucket by text only"
            + ("; a limit for every run alike leaves key out" if part is None else ""),
            fix=declared + ("KEY or '-')" if part is None else "str(KEY))"),
        )
    hashed = declared + "hashlib.sha256(KEY.encode('utf-8', 'surrogatepass')).hexdigest())"
    try:
        check_text(part, what=f"the rate_limit key of job {d.name!r}", fix=hashed)
    except JobsError as err:
        raise RateKeyFailed(err.code, cause=err.cause, fix=err.fix) from None
    size = len(part.encode())
    if size > MAX_KEY_BYTES:
        raise RateKeyFailed(
            X_INVALID_ARGUMENT,
            cause=f"the rate_limit key of job {d.name!r} is {size:,} bytes on this job's input; a key holds at "
            f"most {MAX_KEY_BYTES:,} (an index entry's limit)",
            fix=hashed,
        )
    return "rate:" + d.name + ":" + part


class Limits:
    def __init__(self, driver: Driver, clock: Clock, *, worker: str, lease_seconds: float, shed_delay: float) -> None:
        self.driver, self.clock, self.worker = driver, clock, worker
        self.lease_seconds, self.shed_delay = lease_seconds, shed_delay

    async def admit(self, d: JobDefinition, row: JobRow, lease: Lease) -> Shed | None:
        """None: admitted (a concurrency slot, if any, is recorded on the lease). Else the shed.
        RateKeyFailed when the rate limit's key raises, before any slot is taken."""
        rate = rate_key(d, row) if d.rate_limit is not None else None
        if d.concurrency is not None:
            key = concurrency_key(d)
            slot = await self.driver.slot_acquire(
                key=key,
                limit=d.concurrency,
                job_id=row.id,
                worker=self.worker,
                now=self.clock.now(),
                lease_seconds=self.lease_seconds,
            )
            if slot is None:
                return Shed("concurrency", key, self.shed_delay)
            lease.slot_key, lease.slot = key, slot
        if d.rate_limit is not None and rate is not None:
            wait = await self.driver.rate_take(
                key=rate, limit=d.rate_limit.limit, per=d.rate_limit.per, now=self.clock.now()
            )
            if wait > 0:
                await self.release(lease)  # the slot taken above is not used
                return Shed("rate", rate, wait)
        return None

    async def release(self, lease: Lease) -> None:
        if lease.slot_key is not None and lease.slot is not None:
            key, slot = lease.slot_key, lease.slot
            lease.slot_key = lease.slot = None
            await self.driver.slot_release(key=key, slot=slot, job_id=lease.claim.job_id)
