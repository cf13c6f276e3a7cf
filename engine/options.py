"""Options objects (RetryPolicy, RateLimit, WorkerConfig and the services' configs): an unknown
keyword is the engine's error with "did you mean", where the dataclass's own __init__ would raise
a TypeError naming no option and no fix."""

from __future__ import annotations

import math
from dataclasses import fields
from datetime import datetime
from typing import Any, ClassVar, TypeVar

from engine.errors import X_INVALID_ARGUMENT, JobsError, unknown_option
from engine.ids import IdFactory
from engine.text import check_text

C = TypeVar("C")

_NAMES: dict[type, tuple[str, ...]] = {}


def _names(cls: type) -> tuple[str, ...]:
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = tuple(f.name for f in fields(cls))  # type: ignore[arg-type]
    return names


class Options:
    """A base for a frozen dataclass of options. ``OPTION_CODE`` is the error's code; ``OPTION_FIX``
    the call to write, ``{option}`` where the option goes (default ``ClassName({option}=...)``)."""

    OPTION_CODE: ClassVar[str] = X_INVALID_ARGUMENT
    OPTION_FIX: ClassVar[str] = ""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            names = _names(cls)
            if unknown := set(kwargs) - set(names):
                fix = cls.OPTION_FIX or f"{cls.__name__}({{option}}=...)"
                subject = f"{cls.__name__} takes no option"
                raise unknown_option(subject, unknown, names, fix, names[0], cls.OPTION_CODE)
        return super().__new__(cls)


INT32 = 2**31  # priorities, limits and counts are stored as 32-bit integers


def int32(value: Any) -> bool:
    """A whole number (not a bool) a 32-bit integer column holds."""
    return isinstance(value, int) and not isinstance(value, bool) and -INT32 <= value < INT32


def finite_positive(value: Any) -> bool:
    """A rate or a factor an option may hold: a real number > 0 and < infinity (a number of
    seconds is ``seconds``')."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < math.inf


# The longest span any duration option holds (a job's timeout, an enqueue's delay, a lease, an
# interval, a retention): 100 years. Every one is added to a time sooner or later, and past about
# 2.5e11 s from now that sum is past the year 9999, the last a datetime holds: a value accepted
# here must never fail there, in a claim or a maintenance pass long after it was given.
LONGEST_SECONDS = 100 * 365 * 86400


def seconds(value: Any, *, zero: bool = False) -> bool:
    """A number of seconds a duration option may hold: a real number > 0 (>= 0 with ``zero``)
    and at most LONGEST_SECONDS (never nan, never infinity)."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and (0 <= value if zero else 0 < value)
        and value <= LONGEST_SECONDS
    )


def seconds_rule(lead: str = "", *, zero: bool = False, longest: str = f"{LONGEST_SECONDS} (100 years)") -> str:
    """What ``seconds`` accepts, said in a cause: "a finite number of seconds > 0 and at most
    3153600000 (100 years)"; ``lead`` in place of the words before "and", ``longest`` in place of
    the bound (timeout_rule's)."""
    lead = lead or f"a finite number of seconds {'>= 0' if zero else '> 0'}"
    return f"{lead} and at most {longest}"


# A statement_timeout or lock_timeout is a 32-bit integer of milliseconds to PostgreSQL: a number
# of seconds that becomes one holds at most this many ms (about 24.8 days). A larger setting is
# refused by the server, at connection start as an unreachable database, or as a failed statement.
LONGEST_TIMEOUT_MS = 2**31 - 1


def timeout_seconds(value: Any) -> bool:
    """A number of seconds that becomes a statement_timeout (or a lock_timeout): ``seconds`` holds
    it, and in whole milliseconds it is at most LONGEST_TIMEOUT_MS."""
    return seconds(value) and value * 1000 <= LONGEST_TIMEOUT_MS


def timeout_rule(lead: str = "") -> str:
    """What ``timeout_seconds`` accepts, said in a cause."""
    return seconds_rule(
        lead, longest=f"{LONGEST_TIMEOUT_MS // 1000} (about 24 days, PostgreSQL's longest statement timeout)"
    )


def config_or_default(kind: type[C], given: object) -> C:
    """A service's config: ``given`` when it is a ``kind``, the defaults for None; anything else is
    refused at once (X_INVALID_ARGUMENT) rather than failing at the service's first use."""
    if given is None:
        return kind()
    if not isinstance(given, kind):
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"a {kind.__name__} was expected, not {type(given).__name__} ({given!r:.60})",
            fix=f"{kind.__name__}(...)",
        )
    return given


def check_engine_setup(clock: object, ids: object, environment: object) -> None:
    """An engine's clock, id factory and environment (``connect``'s), refused when it is built
    rather than at its first enqueue (the clock, the ids) or its first backfill (the environment)."""
    if clock is not None:
        answer = getattr(clock, "now", None)
        has_now = callable(answer) and not isinstance(clock, type)  # a class: its now() wants an instance
        now = answer() if has_now and answer is not None else None
        # A naive now() would be read as local time by whoever stores it: every run_at off by the offset.
        if not isinstance(now, datetime) or now.utcoffset() is None:
            said = (
                f"answers now()={now!r:.60}, not a datetime with a time zone"
                if has_now
                else "is a class, not a clock (pass an instance)"
                if isinstance(clock, type)
                else "has no now()"
            )
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"clock={clock!r:.60} {said}; a clock answers the time of every enqueue",
                fix="connect(dsn, clock=FakeClock(datetime.now(UTC)))",
            )
    if ids is not None and not isinstance(ids, IdFactory):
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"ids={ids!r:.60} is not an engine.ids.IdFactory",
            fix="connect(dsn, ids=IdFactory(clock, seed=7))",
        )
    if environment is not None:
        fix = "connect(dsn, environment='production')"
        if not isinstance(environment, str) or not environment.strip():
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"environment={environment!r:.60} is not a non-empty name (None: $JOBS_ENV, else development)",
                fix=fix,
            )
        check_text(environment, what="environment", fix=fix)


def check_switch(name: str, value: object) -> None:
    """A worker's on/off option (maintenance, relay, scheduler): True or False, never a value
    read for its truth ('no' would switch it on)."""
    if not isinstance(value, bool):
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"worker option {name}={value!r:.60} must be True or False",
            fix=f"eng.worker(jobs, {name}=False)",
        )
