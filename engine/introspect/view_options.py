"""An Introspector's options, checked before anything is read (its tenant scope is EngineView's
to check, as every door's tenant: engine.text.check_tenant)."""

from __future__ import annotations

from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.options import seconds, seconds_rule, timeout_rule, timeout_seconds


def check_view_options(*, budget: object, stale_after: object, count_cap: object, page_count_cap: object) -> None:
    """An Introspector's options: the budget a statement timeout holds (each read's), stale_after
    a duration (engine/options.py), caps whole numbers >= 1 (a bool is not one), each refused with
    the option named before anything is read."""
    if not timeout_seconds(budget):
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"budget={budget!r} must be {timeout_rule()}: it bounds each read's statements",
            fix="Introspector(engine, budget=0.5)",
        )
    if not seconds(stale_after):
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"stale_after={stale_after!r} must be {seconds_rule()}",
            fix="Introspector(engine, stale_after=30)",
        )
    for key, cap, example in (("count_cap", count_cap, "10000"), ("page_count_cap", page_count_cap, "1000")):
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"{key}={cap!r} must be a whole number >= 1",
                fix=f"Introspector(engine, {key}={example})",
            )
