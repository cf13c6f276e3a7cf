"""What both drivers read the same way from a JobFilter: its search text (a hex prefix of a job id
is the range of ids it spans: UUIDv7 ids sort by time, so the range is an index scan), and its
error code and stop reason, each a value to equal, NULL (the column is null) or None (any)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a worker process never loads the read models (tests/engine/test_import_weight.py)
    from engine.projections_filter import Null


def equal_or_null(wanted: str | Null | None) -> tuple[str | None, bool]:
    """A filter field that takes NULL as (the value a row's column must equal, None: no such
    condition; whether the column must be null): the statements' ``%(code)s``/``%(no_code)s``."""
    if wanted is None or isinstance(wanted, str):
        return wanted, False
    return None, True


def column_matches(column: str | None, wanted: str | Null | None) -> bool:
    """The memory driver's reading of the same field: None any value, NULL a null one only."""
    value, null = equal_or_null(wanted)
    if null:
        return column is None
    return value is None or column == value


def id_range(search: str) -> tuple[str, str] | None:
    """A hex prefix of a UUID (4 to 32 digits, dashes ignored) as [low, high] ids, else None."""
    hexpart = search.replace("-", "").lower()
    if not 4 <= len(hexpart) <= 32 or any(c not in "0123456789abcdef" for c in hexpart):
        return None
    return str(uuid.UUID(hexpart.ljust(32, "0"))), str(uuid.UUID(hexpart.ljust(32, "f")))


def search_terms(search: str) -> tuple[str | None, tuple[str, str] | None]:
    """A search names ids (a hex prefix of one, 4+ digits) or else a key prefix: one index each."""
    span = id_range(search)
    return (None, span) if span is not None else (search, None)
