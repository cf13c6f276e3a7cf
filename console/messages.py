"""Past-tense messages: data loaded by a worker travels up to its screen as one of these, and
widgets post intents the same way. Payloads are the engine's projection dataclasses, untouched."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.message import Message


@dataclass
class Loaded(Message):
    """A screen's refresh finished: ``data`` is what its ``fetch`` answered."""

    data: Any


@dataclass
class QueuesLoaded(Loaded):
    workers: Any = None  # engine.projections.WorkersView: the fleet's slots, once for all queues


class JobsLoaded(Loaded):
    pass


class JobLoaded(Loaded):
    pass


class DeadLettersLoaded(Loaded):
    pass


class WorkersLoaded(Loaded):
    pass


class SchedulesLoaded(Loaded):
    pass


class WhyLoaded(Loaded):
    pass


@dataclass
class LoadFailed(Message):
    """A refresh failed (the database went away, a query ran past its budget)."""

    title: str
    detail: str


@dataclass
class Reconnected(Message):
    """A refresh succeeded after failures: the banner goes."""


@dataclass
class ActionSucceeded(Message):
    """A mutating action landed; ``summary`` says what changed."""

    summary: str


@dataclass
class ActionFailed(Message):
    """A mutating action was refused or failed; nothing changed unless ``summary`` says so."""

    summary: str
    fix: str | None = None


@dataclass
class JobSelected(Message):
    """A job row was chosen in a table (Enter)."""

    job_id: str
