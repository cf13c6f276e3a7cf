"""Options objects (RetryPolicy, RateLimit, WorkerConfig and the services' configs): an unknown
keyword is the engine's error with "did you mean", where the dataclass's own __init__ would raise
a TypeError naming no option and no fix."""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any, ClassVar, TypeVar

from engine.errors import X_INVALID_ARGUMENT, JobsError, unknown_option

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
    """A number of seconds (or a rate) an option may hold: a real number > 0 and < infinity."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < math.inf


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
