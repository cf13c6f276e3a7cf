"""The arguments of the step API and of ``send_event``, checked before anything is written."""

from __future__ import annotations

from typing import Any

from engine.codec import check_json
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.options import seconds as is_seconds
from engine.options import seconds_rule
from engine.text import MAX_NAME, check_tenant, check_text


def _check_name(name: Any, what: str, fix: str) -> str:
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"{what} {name!r} must be a non-empty string of at most {MAX_NAME} characters",
            fix=fix,
        )
    check_text(name, what=what, fix=fix)
    return name


def check_step_name(name: Any) -> None:
    _check_name(name, "step name", 'await ctx.step.run("charge-card", lambda: charge(order))')


def check_event_name(name: Any) -> str:
    return _check_name(name, "event name", 'eng.send_event("workspace.approved", {"workspace": 7})')


def check_match(match: Any) -> dict[str, Any]:
    """A wait's match is a JSON object its event's payload must contain (jsonb @>); None is {}."""
    if match is None:
        return {}
    if not isinstance(match, dict):
        raise JobsError(
            X_INVALID_ARGUMENT, cause=f"match={match!r} must be a JSON object (a dict)", fix='match={"workspace": 7}'
        )
    out: dict[str, Any] = check_json(match, what="event match")
    return out


def check_event(name: Any, payload: Any, tenant: Any) -> tuple[str, dict[str, Any], str | None]:
    """The arguments of ``send_event``: checked before anything is written."""
    check_event_name(name)
    if payload is None:
        payload = {}
    if not isinstance(payload, dict):
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"event payload {payload!r} must be a JSON object (a dict), so a wait can match its fields",
            fix=f'eng.send_event({name!r}, {{"value": {payload!r}}})',
        )
    check_tenant(tenant)
    return name, check_json(payload, what="event payload"), tenant


def check_wait_timeout(name: str, timeout: Any, fix: str) -> None:
    """A wait's timeout: None (no timeout) or a duration (engine.options.seconds)."""
    if timeout is not None and not is_seconds(timeout):
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"step {name!r}: timeout={timeout!r} must be {seconds_rule('a positive number of seconds')}",
            fix=fix,
        )


def check_sleep(name: str, seconds: Any) -> None:
    """A sleep's length: a duration, zero included (engine.options.seconds)."""
    if not is_seconds(seconds, zero=True):
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"step {name!r}: sleep of {seconds!r} seconds must be {seconds_rule('a finite number >= 0')}",
            fix=f"await ctx.step.sleep({name!r}, 30)",
        )
