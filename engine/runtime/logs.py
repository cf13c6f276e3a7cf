"""Structured JSON log events with stable names (I24): one line per event on the `jobs` logger.

The names are part of the interface: dashboards and alerts match on them, so they never change.
"""

from __future__ import annotations

import json
import logging
from typing import Any

ATTEMPT_FAILED = "jobs.attempt.failed"
JOB_SUSPENDED = "jobs.job.suspended"
WORKER_SHED = "jobs.worker.shed"
WORKER_SETTLE_FAILED = "jobs.worker.settle-failed"
WORKER_STARTED = "jobs.worker.started"
WORKER_DRAINING = "jobs.worker.draining"
WORKER_DRAIN_REQUESTED = "jobs.worker.drain-requested"  # an operator asked it (jobs workers drain ID)
WORKER_STOPPED = "jobs.worker.stopped"
WORKER_CLOSE_ABANDONED = "jobs.worker.close-abandoned"  # a drain step given up at its close_timeout
WORKER_RECONNECTING = "jobs.worker.reconnecting"
WORKER_RECONNECTED = "jobs.worker.reconnected"
WORKER_RELEASED = "jobs.worker.released"
LEASE_LOST = "jobs.lease.lost"
SLOT_LOST = "jobs.worker.slot-lost"  # a running job's fleet concurrency slot was taken by another holder
TIMEOUT_ABANDONED = "jobs.timeout.abandoned"
STEP_ABANDONED = "jobs.step.abandoned"  # a sync step returned after its own signal was aborted
JOB_CANCELLED = "jobs.job.cancelled"
MAINTENANCE_RESCUED = "jobs.maintenance.rescued"
MAINTENANCE_PRUNED = "jobs.maintenance.pruned"
MAINTENANCE_FAILED = "jobs.maintenance.failed"
LEADER_ACQUIRED = "jobs.leader.acquired"
OUTBOX_PUBLISH_FAILED = "jobs.outbox.publish-failed"
OUTBOX_LEASE_LAPSED = "jobs.outbox.lease-lapsed"
OUTBOX_TICK_FAILED = "jobs.outbox.tick-failed"
SCHEDULE_ENQUEUED = "jobs.schedule.enqueued"
SCHEDULE_SKIPPED = "jobs.schedule.skipped"  # occurrences catch-up settled without a job, and how many
SCHEDULE_FENCED = "jobs.schedule.fenced"  # a step the fence refused: the lease or the watermark moved
SCHEDULE_FAILED = "jobs.schedule.failed"
SCHEDULE_PAUSED = "jobs.schedule.paused"
SCHEDULE_RESUMED = "jobs.schedule.resumed"
SCHEDULE_TRIGGERED = "jobs.schedule.triggered"

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


def emit(event: str, level: int = logging.INFO, **fields: Any) -> None:
    if logger.isEnabledFor(level):
        logger.log(level, event, extra={"fields": fields})


def configure_json_logging(level: int = logging.INFO) -> None:
    """What `jobs worker` installs: JSON lines on stderr."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    logger.handlers[:] = [handler]
    logger.setLevel(level)
    logger.propagate = False
