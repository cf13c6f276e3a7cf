"""The relay's claim lease: its one default and its one normalisation (I19), for both drivers.

Two defaults that could drift are two answers to "how long is a claim mine for", and the shorter one
publishes a row twice. ``0`` expires before the claim returns and infinity never expires (a relay
that died would strand its rows), so both are refused when the relay is built, not at its first poll.
"""

from __future__ import annotations

import math

from engine.errors import X_INVARIANT, JobsError

DEFAULT_CLAIM_LEASE_MS = 30_000


def claim_lease_ms(value: object = None) -> int:
    """The lease in whole milliseconds: ``None`` is the default; anything but a positive whole
    number of milliseconds (an int, or a float with no fraction) is X_INVARIANT."""
    if value is None:
        return DEFAULT_CLAIM_LEASE_MS
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _refused(value)
    if isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()):
        raise _refused(value)
    if value <= 0:
        raise _refused(value)
    return int(value)


def _refused(value: object) -> JobsError:
    return JobsError(
        X_INVARIANT,
        cause=f"the outbox claim lease {value!r} is not a positive whole number of milliseconds",
        fix=f"RelayConfig(lease_ms={DEFAULT_CLAIM_LEASE_MS})",
    )
