"""What every command shares: the DSN option and where it comes from."""

from __future__ import annotations

import os

from engine.errors import X_DSN_INVALID, JobsError

DSN_HELP = "PostgreSQL DSN (URL or key=value); defaults to $JOBS_DSN"


def resolve_dsn(dsn: str | None) -> str:
    value = dsn or os.environ.get("JOBS_DSN")
    if not value:
        raise JobsError(
            X_DSN_INVALID,
            cause="no DSN was given and $JOBS_DSN is not set",
            fix="export JOBS_DSN=postgresql://USER@HOST:5432/DBNAME",
        )
    return value
