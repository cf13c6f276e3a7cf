"""What both drivers read the same way from a JobFilter's search text: a hex prefix of a job id
is the range of ids it spans (UUIDv7 ids sort by time, so the range is an index scan)."""

from __future__ import annotations

import uuid


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
