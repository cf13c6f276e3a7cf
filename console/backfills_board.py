"""What the Backfills screen shows, as the console's source answers it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class BackfillsBoard:
    """``rows``: engine.backfills.BackfillView, one per declared backfill and environment (each
    environment it declares, and this console's), by name, this console's environment first;
    ``history``: each row's ledger, newest first."""

    environment: str  # this console's
    app: str | None  # the module the backfills were loaded from, if the console loaded them
    declared: int
    rows: list[Any] = field(default_factory=list)
    history: dict[tuple[str, str], list[Any]] = field(default_factory=dict)
