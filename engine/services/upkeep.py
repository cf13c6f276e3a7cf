"""What the maintenance leader's upkeep acts on (engine/services/maintenance.py): a table whose
dead row versions passed its threshold, an index grown past its size after its last rebuild."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the leader's findings, named in annotations only
    from engine.records import IndexSize, TableRows


def bloated(table: TableRows, *, threshold: int, scale: float) -> bool:
    """A table to vacuum: more dead row versions than ``threshold`` + ``scale`` x its live rows."""
    return table.dead > threshold + scale * table.live


def grown(size: IndexSize, *, growth: float, min_bytes: int) -> bool:
    """An index to rebuild: past ``min_bytes`` and past ``growth`` times its baseline."""
    return size.bytes > max(min_bytes, growth * size.baseline)
