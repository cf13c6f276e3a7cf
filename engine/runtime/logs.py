"""Structured JSON log events with stable names (I24): one line per event on the `jobs` logger.

The names are part of the interface: dashboards and alerts match on them, so they never change.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

ATTEMPT_FAILED = "jobs.attempt.failed"
JOB_SUSPENDED = "jobs.job.suspended"
WORKER_SHED = "jobs.worker.shed"
WORKER_UNKNOWN_JOB = "jobs.worker.unknown-job"  # parked for a worker whose release declares it
WORKER_SETTLE_FAILED = "jobs.worker.settle-failed"
WORKER_STARTED = "jobs.worker.started"
WORKER_DRAINING = "jobs.worker.draining"
WORKER_DRAIN_REQUESTED = "jobs.worker.drain-requested"  # an operator asked it (jobsctl workers drain ID)
WORKER_BURST_DONE = "jobs.worker.burst-done"  # burst=True: nothing left due, the worker drains and exits
WORKER_STOPPED = "jobs.worker.stopped"
WORKER_CLOCK_SKEWED = "jobs.worker.clock-skewed"  # $JOBS_TEST_CLOCK_SKEW moved this process's clock (tests only)
WORKER_CLOSE_ABANDONED = "jobs.worker.close-abandoned"  # a drain step given up at its close_timeout
WORKER_RECONNECTING = "jobs.worker.reconnecting"
WORKER_WAITING_FOR_DATABASE = "jobs.worker.waiting-for-database"  # its start retries a database that does not answer
WORKER_RECONNECTED = "jobs.worker.reconnected"
# A loop's call failed, not for a lost connection: what, code, sqlstate, error, fix (engine/runtime/failures.py)
WORKER_ERROR = "jobs.worker.error"
WORKER_RECOVERED = "jobs.worker.recovered"  # a call of that loop landed after jobs.worker.error ones
WORKER_RELEASED = "jobs.worker.released"
WORKER_GONE = "jobs.worker.gone"  # a worker's presence ended holding claims: its jobs re-delivered
ENGINE_SYNC_IN_LOOP = "jobs.engine.sync-in-loop"  # a sync call blocked a running event loop (once an engine)
LEASE_LOST = "jobs.lease.lost"
SLOT_LOST = "jobs.worker.slot-lost"  # a running job's fleet concurrency slot was taken by another holder
TIMEOUT_ABANDONED = "jobs.timeout.abandoned"
STEP_ABANDONED = "jobs.step.abandoned"  # a sync step returned after its own signal was aborted
JOB_CANCELLED = "jobs.job.cancelled"
MAINTENANCE_RESCUED = "jobs.maintenance.rescued"
MAINTENANCE_PRUNED = "jobs.maintenance.pruned"
MAINTENANCE_REINDEXED = "jobs.maintenance.reindexed"  # a grown GIN index rebuilt: index, bytes before/after, seconds
MAINTENANCE_REINDEX_REFUSED = "jobs.maintenance.reindex-refused"  # the role may not rebuild: the index and the fix
MAINTENANCE_VACUUMED = "jobs.maintenance.vacuumed"  # a jobs table past its dead-row threshold vacuumed (debug)
MAINTENANCE_VACUUM_REFUSED = "jobs.maintenance.vacuum-refused"  # the role may not vacuum: the table and the fix
MAINTENANCE_SEALED = "jobs.maintenance.sealed"  # the open bucket of settled rows sealed, the next opened (debug)
MAINTENANCE_DROPPED = "jobs.maintenance.dropped"  # a sealed bucket past retention dropped whole: its rows
MAINTENANCE_BUCKETS_REFUSED = "jobs.maintenance.buckets-refused"  # the role may not seal or drop: the fix
LEADER_ACQUIRED = "jobs.leader.acquired"
OUTBOX_PUBLISH_FAILED = "jobs.outbox.publish-failed"
OUTBOX_LEASE_LAPSED = "jobs.outbox.lease-lapsed"
SCHEDULE_ENQUEUED = "jobs.schedule.enqueued"
SCHEDULE_SKIPPED = "jobs.schedule.skipped"  # occurrences catch-up settled without a job, and how many
SCHEDULE_FENCED = "jobs.schedule.fenced"  # a step the fence refused: the lease or the watermark moved
SCHEDULE_PAUSED = "jobs.schedule.paused"
SCHEDULE_RESUMED = "jobs.schedule.resumed"
SCHEDULE_TRIGGERED = "jobs.schedule.triggered"
# The connection pool's own messages (psycopg_pool), under names of ours: `message` keeps its text.
POOL_CONNECT_FAILED = "jobs.pool.connect-failed"  # a connection attempt failed; the pool retries
POOL_RECONNECT_GAVE_UP = "jobs.pool.reconnect-gave-up"  # the pool stopped retrying one connection
POOL_CONNECTION_DISCARDED = "jobs.pool.connection-discarded"  # a broken or closed connection dropped
# A pipeline (the claim's) whose statement had already raised could not be ended either: its
# connection was lost; the statement's own error is what the caller handles.
POOL_PIPELINE_LOST = "jobs.pool.pipeline-lost"
POOL_MESSAGE = "jobs.pool.message"  # any other warning of the pool or of psycopg
# The server ended the idle connections a checkout found (a restart, a failover, a terminate,
# idle_session_timeout), so the loop's were reopened (engine.drivers.postgres.pool's own warning).
POOL_SESSIONS_ENDED = "jobs.pool.sessions-ended"

_POOL_EVENTS = {
    "error connecting in %r: %s": POOL_CONNECT_FAILED,
    "reconnection attempt in pool %r failed after %s sec": POOL_RECONNECT_GAVE_UP,
    "discarding broken connection: %s": POOL_CONNECTION_DISCARDED,
    "discarding closed connection: %s": POOL_CONNECTION_DISCARDED,
    "closing returned connection: %s": POOL_CONNECTION_DISCARDED,
    "error resetting connection: %s": POOL_CONNECTION_DISCARDED,
    "rollback failed: %s: %s. Discarding connection %s": POOL_CONNECTION_DISCARDED,
    "error ignored terminating %r: %s": POOL_PIPELINE_LOST,
    "the server ended this loop's idle connections (%s): reopened them": POOL_SESSIONS_ENDED,
}
# psycopg.pool is psycopg's child; the scheduler's are psycopg_pool's; engine.pool is the driver's.
LIBRARY_LOGGERS = ("psycopg", "psycopg_pool", "engine.pool")

logger = logging.getLogger("jobs")


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, event, then the event's fields."""

    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "event": record.getMessage(),
        }
        body.update(getattr(record, "fields", {}))
        return json.dumps(body, default=str, separators=(",", ":"))


class LibraryHandler(logging.Handler):
    """Re-emits a library's log records (psycopg, psycopg_pool) as the engine's events, so a
    worker's log stream is JSON lines only, with stable names."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            event = _POOL_EVENTS.get(str(record.msg), POOL_MESSAGE)
            emit(event, record.levelno, message=record.getMessage(), logger=record.name)
        except Exception:  # never let a log line break the caller
            self.handleError(record)


def short_error(exc: BaseException) -> str:
    """An error as a log field holds it: its class and its message's first line."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def emit(event: str, level: int = logging.INFO, **fields: Any) -> None:
    if logger.isEnabledFor(level):
        logger.log(level, event, extra={"fields": _traced(fields)})


def _traced(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` with the trace and span ids of the OpenTelemetry span current where the event
    happened (a run's, with tracing on: engine/tracing.py), so a log line joins its trace. Read
    only when the application has loaded OpenTelemetry: nothing is imported for it."""
    otel = sys.modules.get("opentelemetry.trace")
    if otel is None:
        return fields
    ctx = otel.get_current_span().get_span_context()
    if not ctx.is_valid:
        return fields
    return {"trace_id": format(ctx.trace_id, "032x"), "span_id": format(ctx.span_id, "016x"), **fields}


def configure_json_logging(level: int = logging.INFO) -> None:
    """What `jobsctl worker` (and `jobsctl relay`, `jobsctl scheduler`) installs: JSON lines on stderr,
    psycopg's and psycopg_pool's warnings among them as `jobs.pool.*` events."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    logger.handlers[:] = [handler]
    logger.setLevel(level)
    logger.propagate = False
    for name in LIBRARY_LOGGERS:  # their warnings as JSON too (their info lines stay off)
        lib = logging.getLogger(name)
        lib.handlers[:] = [LibraryHandler()]
        lib.setLevel(max(level, logging.WARNING))
        lib.propagate = False
