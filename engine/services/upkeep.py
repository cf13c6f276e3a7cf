"""What the maintenance leader's upkeep acts on (engine/services/maintenance.py): a table whose
dead row versions passed its threshold, an index grown past its size after its last rebuild; and
what a pass did."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the leader's findings, named in annotations only
    from engine.records import IndexSize, TableRows


def bloated(table: TableRows, *, threshold: int, scale: float) -> bool:
    """A table to vacuum: more dead row versions than ``threshold`` + ``scale`` x its live rows."""
    return table.dead > threshold + scale * table.live


def grown(size: IndexSize, *, growth: float, min_bytes: int) -> bool:
    """An index to rebuild: past ``min_bytes`` and past ``growth`` times its baseline."""
    return size.bytes > max(min_bytes, growth * size.baseline)


@dataclass(frozen=True)
class MaintenanceResult:
    leader: bool
    term: int | None = None
    rescued: tuple[str, ...] = ()
    pruned: int = 0
    reaped: tuple[str, ...] = field(default=())
    rolled: int = 0  # (queue, minute) rows of completions rolled up
    outbox_pruned: int = 0  # published outbox rows past outbox_retention
    reindexed: tuple[str, ...] = ()  # the indexes rebuilt (schema.name)
    vacuumed: tuple[str, ...] = ()  # the tables vacuumed (schema.name)
    audit_pruned: int = 0  # audit log entries past audit_retention
