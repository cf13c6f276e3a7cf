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


class BackfillsLoaded(Loaded):
    pass


class AuditLoaded(Loaded):
    """The audit log's latest entries (engine.records.AuditEntry), newest first: Activity."""


class WhyLoaded(Loaded):
    pass


class SeriesLoaded(Loaded):
    """A queue's minutes (engine.series.QueueSeries): the charts."""


@dataclass
class OutboxLoaded(Loaded):
    rows: Any = None  # engine.outbox_types.StagedWhy, in stage order: a row and why it is not published


@dataclass
class LoadFailed(Message):
    """A refresh failed (the database went away, a query ran past its budget). It goes up to the
    App, which raises the banner; ``retry_in`` is when the screen tries again."""

    title: str
    detail: str
    retry_in: float = 0.0


@dataclass
class Refreshed(Message):
    """A refresh landed: the App clears the banner and stamps the header."""


@dataclass
class Navigate(Message):
    """Open a screen on top of the current one. ``kind`` is one of ``console.screens.PUSHED``
    (``jobs``, ``job``, ``why``); ``args`` are its constructor's keyword arguments. The App
    handles it, so a screen never imports another screen."""

    kind: str
    args: dict[str, Any]


@dataclass
class ActionSucceeded(Message):
    """A mutating action landed; ``summary`` says what changed. The App logs it (the activity
    screen lists what this operator did this session)."""

    summary: str


@dataclass
class ActionFailed(Message):
    """A mutating action was refused or failed; nothing changed unless ``summary`` says so."""

    summary: str
    fix: str | None = None
