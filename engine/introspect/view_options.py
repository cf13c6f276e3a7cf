"""An Introspector's options, checked before anything is read (its tenant scope is EngineView's
to check, as every door's tenant: engine.text.check_tenant)."""

from __future__ import annotations

from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.options import finite_positive


def check_view_options(*, budget: object, stale_after: object, count_cap: object, page_count_cap: object) -> None:
    """An Introspector's options: seconds are finite and positive, caps whole numbers >= 1 (a bool
    is not one), each refused with the option named before anything is read."""
    for key, seconds, example in (("budget", budget, "0.5"), ("stale_after", stale_after, "30")):
        if not finite_positive(seconds):
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"{key}={seconds!r} must be a positive, finite number of seconds",
                fix=f"Introspector(engine, {key}={example})",
            )
    for key, cap, example in (("count_cap", count_cap, "10000"), ("page_count_cap", page_count_cap, "1000")):
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"{key}={cap!r} must be a whole number >= 1",
                fix=f"Introspector(engine, {key}={example})",
            )
