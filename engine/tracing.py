"""OpenTelemetry tracing: a job's run joins the trace of the code that enqueued it.

``connect(dsn, tracing=True)``: each enqueue, batch or stage is a ``send`` span (kind PRODUCER)
around its write, and its context is stored with the jobs it wrote (jobs.job.trace, and
jobs.outbox.trace for a staged job: the propagator's carrier, W3C ``traceparent`` and
``tracestate``), so a relay's publication keeps the stager's trace. A worker started with tracing
on makes each run a ``process`` span (kind CONSUMER) whose parent is that stored context, current
while the handler runs: the handler's own spans (an HTTP call, a query, a sync handler's in its
thread) are its children, and so is a ``step <name>`` span for each durable run step that runs (a
replayed step answers its stored result and makes none). A job enqueued without a context (a cron occurrence, a backfill's pass,
an engine without tracing) starts a trace of its own.

Names and attributes follow OpenTelemetry's messaging conventions: ``send <job>`` and
``process <job>``, ``messaging.system`` "jobs", the queue as ``messaging.destination.name``, the job
id as ``messaging.message.id``, plus the attempt, the run and the outcome. A run that fails
(retried or dead) has status ERROR, its error code as ``error.type``.

The spans go to the application's tracer provider (opentelemetry-api's global one, which its SDK
setup installs, or the one given): the engine installs none and exports nothing itself. Without
opentelemetry-api installed, ``tracing=True`` is refused at ``connect`` rather than ignored.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from engine.errors import X_INVALID_ARGUMENT, JobsError

if TYPE_CHECKING:
    from engine.runtime.execute import Execution
    from engine.types import JobRow, NewJob

SYSTEM = "jobs"
SCOPE = "jobs"
FAILED = frozenset({"retried", "dead", "settle-failed", "lost"})


class Tracing:
    """Spans for enqueues and runs, on ``tracer_provider`` (None: the global one)."""

    def __init__(self, tracer_provider: Any = None) -> None:
        try:
            from opentelemetry import context, propagate, trace
        except ImportError:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause="tracing=True needs opentelemetry-api, which is not installed",
                fix="pip install opentelemetry-api (the otel extra), then set up your OpenTelemetry SDK",
            ) from None
        self._trace, self._propagate, self._context = trace, propagate, context
        self.tracer = trace.get_tracer(SCOPE, tracer_provider=tracer_provider)

    @contextmanager
    def send(self, jobs: Sequence[NewJob], count: int) -> Iterator[dict[str, str]]:
        """A ``send`` span around writing ``count`` jobs, ``jobs`` the first of them; yields the
        carrier to store with each (empty when no span is recorded and no context came in)."""
        names = {j.name for j in jobs}
        queues = {j.queue for j in jobs}
        what = next(iter(names)) if len(names) == 1 else next(iter(queues)) if len(queues) == 1 else "jobs"
        attributes: dict[str, Any] = {"messaging.system": SYSTEM, "messaging.operation.type": "send"}
        if len(queues) == 1:
            attributes["messaging.destination.name"] = next(iter(queues))
        if count == 1:
            attributes["messaging.message.id"] = jobs[0].id
        else:
            attributes["messaging.batch.message_count"] = count
        kind = self._trace.SpanKind.PRODUCER
        with self.tracer.start_as_current_span(f"send {what}", kind=kind, attributes=attributes):
            carrier: dict[str, str] = {}
            self._propagate.inject(carrier)
            yield carrier

    @contextmanager
    def process(self, row: JobRow) -> Iterator[Any]:
        """The ``process`` span of one run of ``row``, its parent the context stored with the job,
        current inside the block (the handler's spans are its children)."""
        # A job without a stored context starts a trace of its own, whatever the worker's task holds.
        parent = self._propagate.extract(row.trace) if row.trace else self._context.Context()
        attributes: dict[str, Any] = {
            "messaging.system": SYSTEM,
            "messaging.operation.type": "process",
            "messaging.destination.name": row.queue,
            "messaging.message.id": row.id,
            "jobs.name": row.name,
            "jobs.attempt": row.attempt,
            "jobs.run": row.run,
        }
        if row.tenant is not None:
            attributes["jobs.tenant"] = row.tenant
        with self.tracer.start_as_current_span(
            f"process {row.name}",
            context=parent,
            kind=self._trace.SpanKind.CONSUMER,
            attributes=attributes,
            record_exception=True,
            set_status_on_exception=True,
        ) as span:
            yield span

    def step(self, name: str, seq: int) -> Any:
        """The span of one run step that runs (a replay answers its stored result, no span), a
        child of the run's: failed when the step raised."""
        return self.tracer.start_as_current_span(
            f"step {name}",
            attributes={"jobs.step.name": name, "jobs.step.seq": seq},
            record_exception=True,
            set_status_on_exception=True,
        )

    def ended(self, span: Any, ex: Execution | None) -> None:
        """What the run came to, on its span: None is a completion (its ack buffered)."""
        if ex is None:
            span.set_attribute("jobs.outcome", "completed")
            return
        span.set_attribute("jobs.outcome", ex.outcome)
        if ex.stop_reason is not None:
            span.set_attribute("jobs.stop_reason", ex.stop_reason)
        if ex.abort_reason is not None:
            span.set_attribute("jobs.abort_reason", ex.abort_reason)
        if ex.outcome in FAILED:
            span.set_attribute("error.type", ex.error_code or ex.outcome)
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, ex.error))


def carried(rows: list[NewJob], carrier: dict[str, str] | None) -> list[NewJob]:
    """``rows``, each carrying ``carrier`` (the one place a job takes its enqueuer's context)."""
    return [r._replace(trace=carrier) for r in rows] if carrier else rows


def trace_id(carrier: dict[str, str] | None) -> str | None:
    """The trace id a stored carrier names (its W3C traceparent's second field), for a reader
    who looks the trace up in their tracing backend; None without one. Needs no OpenTelemetry."""
    parent = (carrier or {}).get("traceparent")
    if not isinstance(parent, str):
        return None
    parts = parent.split("-")
    return parts[1] if len(parts) >= 4 and len(parts[1]) == 32 else None


def tracing_for(value: object) -> Tracing | None:
    """``tracing=`` as ``connect`` and ``eng.worker`` take it: False/None (off), True (the global
    tracer provider) or a Tracing; anything else refused."""
    if value is None or value is False:
        return None
    if value is True:
        return Tracing()
    if isinstance(value, Tracing):
        return value
    raise JobsError(
        X_INVALID_ARGUMENT,
        cause=f"tracing={value!r} is not True, False or an engine.tracing.Tracing",
        fix="connect(dsn, tracing=True)",
    )


__all__ = ["Tracing", "carried", "trace_id", "tracing_for"]
