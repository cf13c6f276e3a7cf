"""The engine's structured log events as the console can see them: only those of an engine
running in the console's own process (the demo), kept in memory by a logging handler.

A console opened on a DSN runs no engine: the events of the workers go to their own logs (JSON
lines from `jobsctl worker`), which the console cannot read, and the database keeps no copy of them.
What the database does keep, the console shows beside them: a job's history and attempts.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

KEPT = 500  # events kept in memory, newest last


@dataclass(frozen=True)
class LogEvent:
    at: datetime
    level: str  # info | warning | error
    event: str  # the stable name, e.g. jobs.attempt.failed
    fields: Mapping[str, Any] = field(default_factory=dict)

    def about(self, *, job_id: str | None = None, queue: str | None = None, worker: str | None = None) -> bool:
        """Whether the event names this job, queue or worker (a worker's events name it as
        ``worker``; a job's name its ``job_id`` and its ``queue``)."""
        f = self.fields
        if job_id is not None:
            return f.get("job_id") == job_id
        if queue is not None:
            return f.get("queue") == queue or queue in (f.get("queues") or ())
        if worker is not None:
            return f.get("worker") == worker
        return True


class RecentEvents(logging.Handler):
    """Keeps the latest events of the `jobs` logger in memory, structured (the engine's `fields`)."""

    def __init__(self, kept: int = KEPT) -> None:
        super().__init__(logging.INFO)
        self.events: deque[LogEvent] = deque(maxlen=kept)

    def emit(self, record: logging.LogRecord) -> None:
        fields = getattr(record, "fields", None)
        self.events.append(
            LogEvent(
                datetime.fromtimestamp(record.created, UTC),
                record.levelname.lower(),
                record.getMessage(),
                dict(fields) if isinstance(fields, Mapping) else {},
            )
        )

    def snapshot(self) -> list[LogEvent]:
        return list(self.events)
