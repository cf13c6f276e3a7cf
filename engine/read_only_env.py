"""$JOBS_READ_ONLY, the one switch that makes both `jobsctl` (engine/cli/read_only.py) and
`jobs-console` (console/cli.py) read-only, read one way for both: the console may not import
engine.cli, so the parser lives here, beside nothing it would drag in."""

from __future__ import annotations

from engine.errors import X_INVALID_ARGUMENT, JobsError

READ_ONLY_ENV = "JOBS_READ_ONLY"
ON_WORDS = ("1", "true", "yes", "on")
OFF_WORDS = ("0", "false", "no", "off", "")


def env_read_only(value: str | None) -> bool:
    """$JOBS_READ_ONLY as a switch: on (1, true, yes, on), off (0, false, no, off, empty or
    unset), in any case; any other word is refused rather than read as one or the other."""
    if value is None:
        return False
    word = value.strip().lower()
    if word in ON_WORDS or word in OFF_WORDS:
        return word in ON_WORDS
    raise JobsError(
        X_INVALID_ARGUMENT,
        cause=f"{READ_ONLY_ENV}={value!r} is not a switch: on is 1, true, yes or on; off is 0, false, no, off "
        "or empty (any case)",
        fix=f"export {READ_ONLY_ENV}=1",
    )
