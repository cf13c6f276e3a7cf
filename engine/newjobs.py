"""A job's row built from an ``Enqueue``: the checks every enqueue makes before anything is
written (the engine's enqueue and a step's), and the ``send`` span that carries a trace to the rows."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple, Self, TypeVar

from engine.clock import later, utc
from engine.codec import check_json_text
from engine.errors import X_INVALID_ARGUMENT, X_NOT_A_JOB, JobsError, unknown_option
from engine.ids import IdFactory
from engine.jobs import JobDefinition
from engine.options import int32, seconds, seconds_rule
from engine.text import check_key_size, check_tenant
from engine.tracing import carried
from engine.types import NewJob

if TYPE_CHECKING:
    from engine.tracing import Tracing

T = TypeVar("T")


class _EnqueueFields(NamedTuple):
    job: JobDefinition
    input: Any
    tenant: str | None = None
    delay: float | None = None
    run_at: datetime | None = None
    priority: int | None = None


_NO_INPUT = object()
_tuple_new = tuple.__new__


class Enqueue(_EnqueueFields):
    """One job of a batch: ``eng.enqueue_many([Enqueue(send_email, {...}), ...])``. A NamedTuple
    (immutable, keyword-constructible) rather than a frozen dataclass: a batch builds one per job,
    and a frozen dataclass's __init__ cost four times as much. A field it does not have, or no
    input, is refused as an unknown option of ``eng.enqueue()`` is, and mypy catches both first."""

    __slots__ = ()

    if TYPE_CHECKING:  # what mypy checks: an input is required, and no other field exists

        def __new__(
            cls,
            job: JobDefinition,
            input: Any,
            tenant: str | None = None,
            delay: float | None = None,
            run_at: datetime | None = None,
            priority: int | None = None,
        ) -> Self: ...

    else:  # what runs: the same fields, a missing input or another field refused with its fix

        def __new__(cls, job, input=_NO_INPUT, tenant=None, delay=None, run_at=None, priority=None, **unknown):
            if unknown or input is _NO_INPUT:
                raise _refused_fields(job, unknown)
            return _tuple_new(cls, (job, input, tenant, delay, run_at, priority))


def _refused_fields(job: Any, unknown: dict[str, Any]) -> JobsError:
    """The refusal of ``Enqueue(...)`` given ``unknown`` fields (the nearest field named), or no input."""
    fix = "Enqueue(job, input)"
    if not unknown:
        name = getattr(job, "name", job)
        return JobsError(X_INVALID_ARGUMENT, cause=f"Enqueue() of job {name!r} was given no input", fix=fix)
    err = unknown_option("Enqueue() has no field", unknown, _EnqueueFields._fields, "{option}", "tenant")
    if err.fix not in ("job", "input"):
        fix = f"Enqueue(job, input, {err.fix}=...)"
    return JobsError(X_INVALID_ARGUMENT, cause=err.cause, fix=fix)


class Opened(Enqueue):
    """An Enqueue from a gated job's own door (engine.backfills' start, once every gate let the
    pass through): the one way such a job is written; a plain Enqueue of it is refused."""

    __slots__ = ()


# A batch past this many rows goes out a statement per CHUNK rows, pipelined in one transaction,
# so checking and encoding a chunk overlaps the server's insert of the one before: a batch of 100
# is two (`python -m bench.ab --base REV --only batch100,batch1000` compares chunk sizes). The
# relay's batches, when they go out apart from their claim, are chunked the same way.
CHUNK = 50

# What enqueue, stage and their async twins take besides the job and its input.
ENQUEUE_OPTIONS = ("tenant", "delay", "run_at", "priority")


def refuse_unknown(call: str, unknown: dict[str, Any]) -> None:
    """A keyword of ``eng.<call>()`` that is none of its options (``key=``, ``queue=``: a job's key
    and queue are declared on the job) refused with the nearest option, before anything is written."""
    if unknown:
        fix = f"eng.{call}(job, input, {{option}}=...)"
        raise unknown_option(f"{call}() takes no option", unknown, ENQUEUE_OPTIONS, fix, "tenant", X_INVALID_ARGUMENT)


def first_run(delay: Any, run_at: Any, now: datetime) -> datetime | None:
    """When a job given ``delay`` seconds or ``run_at`` first runs (None: now), each refused with its fix."""
    if delay is not None and run_at is not None:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause="both delay and run_at were given",
            fix="pass one of delay=SECONDS or run_at=DATETIME",
        )
    if run_at is not None:
        fix = "run_at=datetime.now(UTC) + timedelta(hours=1)"
        # A tzinfo whose utcoffset() is None is naive too: astimezone would read it as local time.
        if not isinstance(run_at, datetime) or run_at.utcoffset() is None:
            raise JobsError(X_INVALID_ARGUMENT, cause=f"run_at={run_at!r} is not a datetime with a time zone", fix=fix)
        try:
            return utc(run_at)
        except OverflowError:  # the year 9999 at UTC-14, the year 1 at UTC+14: no UTC datetime holds it
            raise JobsError(
                X_INVALID_ARGUMENT, cause=f"run_at={run_at.isoformat()} is outside what a UTC datetime holds", fix=fix
            ) from None
    if not seconds(delay, zero=True):
        raise JobsError(X_INVALID_ARGUMENT, cause=f"delay={delay!r} must be {seconds_rule(zero=True)}", fix="delay=10")
    return later(now, delay, what=f"delay={delay!r} seconds", fix="delay=86400") if delay else None


def new_jobs(
    specs: Sequence[Enqueue],
    ids: IdFactory,
    now: datetime,
    trace: dict[str, str] | None,
    *,
    start: int = 0,
    of: int = 0,
) -> list[NewJob]:
    """Check and build a batch's rows: the first bad one raises, before anything is written, its
    cause naming which item it is when the batch has more than one (``specs`` is the part from
    item ``start`` of a batch of ``of``, or the whole batch)."""
    rows: list[NewJob] = []
    try:
        for s, jid in zip(specs, ids.many(len(specs), now)):
            rows.append(new_job(s, now, jid))
    except JobsError as err:
        whole = of or len(specs)
        if whole < 2:
            raise
        cause = f"item {start + len(rows) + 1} of {whole}: {err.cause}"
        placed = JobsError(err.code, cause, err.fix, docs=err.docs, retry_after=err.retry_after, meta=err.meta)
        raise placed from err.__cause__ or err  # the original failure stays the one chained
    return carried(rows, trace)


def new_job(spec: Enqueue, now: datetime, job_id: str) -> NewJob:
    if not isinstance(spec, Enqueue):
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"a batch holds {spec!r}, not an Enqueue",
            fix="eng.enqueue_many([Enqueue(send_email, {'to': 'a@b.c'}), ...])",
        )
    h, value, tenant, delay, run_at, priority = spec
    if not isinstance(h, JobDefinition):
        raise JobsError(
            X_NOT_A_JOB, cause=f"{h!r} is not a job handle", fix="pass the function decorated with @job(...)"
        )
    if h.gated and type(spec) is not Opened:
        raise h.gate_refusal()
    if delay is not None or run_at is not None:
        run_at = first_run(delay, run_at, now)
    if priority is not None and not int32(priority):
        raise JobsError(
            X_INVALID_ARGUMENT, cause=f"priority={priority!r} must be a whole number (32-bit)", fix="priority=10"
        )
    check_tenant(tenant)
    inp, text = check_json_text(value, job=h.name)
    key = h.key_for(inp)
    check_key_size(key, h.name)
    return NewJob(
        job_id,
        h.name,
        h.queue,
        key,
        inp,
        h.retry.attempts,
        tenant,
        run_at,
        h.priority if priority is None else priority,
        text,
    )


async def sent(
    tracing: Tracing | None, first: list[NewJob], count: int, write: Callable[[list[NewJob], Any], Awaitable[T]]
) -> T:
    """``write(rows, carrier)`` of a batch whose first rows are ``first`` (``count`` in all): inside
    a ``send`` span whose context the rows carry when tracing is on (engine/tracing.py)."""
    if tracing is None:
        return await write(first, None)
    with tracing.send(first, count) as carrier:
        return await write(carried(first, carrier), carrier)
