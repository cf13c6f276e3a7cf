"""The retry policy (backoff arithmetic) and the classification of errors.

The decision reads the ERROR as well as the attempt count (I4): ``terminal`` is dead on this
attempt; ``retry-after`` retries at the delay the error names, clamped by ``max_delay``, and still
burns an attempt; ``retryable``, unclassified codes and non-engine exceptions follow the backoff.
The attempt ceiling outranks everything but ``terminal``. An unregistered code is never terminal.
"""

from __future__ import annotations

import math
import random
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from engine.errors import X_HANDLER_FAILED, X_INVALID_ARGUMENT, X_INVALID_DEFINITION, JobsError
from engine.options import Options
from engine.text import storable
from engine.types import Claim, Classification, Nack, StopReason

Backoff = Literal["fixed", "linear", "exponential"]
_CLASSIFICATIONS: tuple[str, ...] = ("terminal", "retry-after", "retryable")
LONGEST_DELAY = 365 * 86400.0  # seconds: a retry is at most a year away
MOST_ATTEMPTS = 1_000_000  # a year of attempts at max_delay=30 s; the column is a 32-bit int
# How long a job no claiming worker declares is parked for one that does (a rolling deploy whose
# producers run the new release before its workers), from when it first fell due; then it is dead
# as X_UNKNOWN_JOB (engine/runtime/execute.py).
UNKNOWN_GRACE = 600.0


@dataclass(frozen=True)
class RetryPolicy(Options):
    """``attempts`` counts the first run: attempts=5 is one run and up to four retries."""

    attempts: int = 3
    backoff: Backoff = "exponential"
    delay: float = 1.0
    max_delay: float = 300.0
    jitter: float = 0.0  # a fraction: 0.2 spreads each delay over +-20%
    seed: int | None = field(default=None, compare=False)

    OPTION_CODE = X_INVALID_DEFINITION

    def __post_init__(self) -> None:
        def bad(what: str, fix: str) -> JobsError:
            return JobsError(X_INVALID_DEFINITION, cause=f"RetryPolicy {what}", fix=fix)

        if (
            not isinstance(self.attempts, int)
            or isinstance(self.attempts, bool)
            or not 1 <= self.attempts <= MOST_ATTEMPTS
        ):
            raise bad(
                f"attempts={self.attempts!r} must be a whole number from 1 to {MOST_ATTEMPTS:,}",
                "RetryPolicy(attempts=3)",
            )
        if self.backoff not in ("fixed", "linear", "exponential"):
            raise bad(
                f"backoff={self.backoff!r} is not fixed, linear or exponential", "RetryPolicy(backoff='exponential')"
            )
        for name, default, unit in (
            ("delay", 1.0, " of seconds"),
            ("max_delay", 300.0, " of seconds"),
            ("jitter", 0.2, ""),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise bad(f"{name}={value!r} must be a finite number{unit}", f"RetryPolicy({name}={default})")
        if self.max_delay > LONGEST_DELAY:
            raise bad(
                f"max_delay={self.max_delay!r} is past a year ({LONGEST_DELAY:.0f} s), the longest wait between attempts",
                "RetryPolicy(max_delay=86400)",
            )
        if not self.delay >= 0:
            raise bad(f"delay={self.delay!r} must be >= 0 seconds", "RetryPolicy(delay=1.0)")
        if not self.max_delay >= self.delay:
            raise bad(
                f"max_delay={self.max_delay!r} is below delay={self.delay!r}",
                f"RetryPolicy(delay={self.delay!r}, max_delay={max(self.delay, 300.0)!r})",
            )
        if not 0.0 <= self.jitter <= 1.0:
            raise bad(f"jitter={self.jitter!r} must be a fraction between 0 and 1", "RetryPolicy(jitter=0.2)")
        if self.attempts == 1:
            # One attempt is never retried: the backoff's shape would do nothing.
            inert = [
                f"{name}={value!r}"
                for name, value, default in (
                    ("backoff", self.backoff, "exponential"),
                    ("delay", self.delay, 1.0),
                    ("max_delay", self.max_delay, 300.0),
                    ("jitter", self.jitter, 0.0),
                )
                if value != default
            ]
            if inert:
                raise bad(
                    f"attempts=1 never retries, so {', '.join(inert)} would do nothing "
                    "(leave them out for no retry, or allow retries)",
                    f"RetryPolicy(attempts=3, {', '.join(inert)})",
                )
        if self.seed is not None:
            if isinstance(self.seed, bool) or not isinstance(self.seed, int):
                raise bad(f"seed={self.seed!r} must be a whole number (or None)", "RetryPolicy(jitter=0.2, seed=42)")
            if not self.jitter:
                # The seed only draws the jitter: without jitter every delay is the backoff's own.
                raise bad(
                    f"seed={self.seed!r} does nothing without jitter (jitter={self.jitter!r})",
                    f"RetryPolicy(jitter=0.2, seed={self.seed!r})",
                )

    def base_delay(self, attempt: int) -> float:
        """The delay before the retry that follows failed attempt ``attempt`` (1-based), no jitter."""
        if self.backoff == "fixed":
            raw = self.delay
        elif self.backoff == "linear":
            raw = self.delay * attempt
        else:
            # Doubling past 2**1023 is past any max_delay; an int that large has no float.
            raw = self.delay * float(2 ** min(attempt - 1, 1023))
        return min(raw, self.max_delay)

    def delay_after(self, attempt: int, rng: random.Random | None = None) -> float:
        base = self.base_delay(attempt)
        if not self.jitter:
            return base
        r = rng or random.Random(None if self.seed is None else f"{self.seed}:{attempt}")
        return min(self.max_delay, max(0.0, base * (1 + r.uniform(-self.jitter, self.jitter))))


def retry_schedule(policy: RetryPolicy) -> list[float]:
    """The delays between attempts: attempts=5, exponential, delay=1 -> [1, 2, 4, 8]. With a seed,
    each delay is drawn as the worker draws it (``delay_after``, seeded per attempt), so the
    schedule is the one its retries keep."""
    if not isinstance(policy, RetryPolicy):
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"retry_schedule takes a RetryPolicy, not {policy!r:.60}",
            fix="retry_schedule(RetryPolicy(attempts=5, delay=1.0))",
        )
    return [policy.delay_after(n) for n in range(1, policy.attempts)]


# --- classification of errors -----------------------------------------------------------------

_RETRY_TABLE: dict[str, Classification] = {
    "X_TIMEOUT": "retryable",
    "X_STEP_TIMEOUT": "retryable",
    "X_LEASE_LOST": "retryable",
    "X_INPUT_NOT_JSON": "terminal",
    "X_TOO_LARGE": "terminal",
    # An engine call a handler made with a bad argument (a step's name, a sleep of nan, an enqueue's
    # delay): the next attempt makes the same call the same way.
    "X_INVALID_ARGUMENT": "terminal",
    # Raised by a run only once no worker has known the job for UNKNOWN_GRACE.
    "X_UNKNOWN_JOB": "terminal",
}


def register_error_retry(table: dict[str, str]) -> None:
    """Classify an app's error codes: ``{"X_INVOICE_REJECTED": "terminal", ...}``."""
    if not isinstance(table, dict):
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"register_error_retry takes a dict of {{code: classification}}, not {table!r:.60}",
            fix="register_error_retry({'X_INVOICE_REJECTED': 'terminal'})",
        )
    for code, kind in table.items():
        if not isinstance(code, str) or not code.strip():
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"register_error_retry: error code {code!r} is not a non-empty string",
                fix="register_error_retry({'X_INVOICE_REJECTED': 'terminal'})",
            )
        if not isinstance(kind, str) or kind not in _CLASSIFICATIONS:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"classification {kind!r} for {code!r} is not one of {', '.join(_CLASSIFICATIONS)}",
                fix=f"register_error_retry({{{code!r}: 'retryable'}})",
            )
    for code, kind in table.items():
        _RETRY_TABLE[code] = kind  # type: ignore[assignment]


def declared_error_retry(code: str | None) -> Classification | None:
    """The registered classification of a code, or None when nobody classified it."""
    return _RETRY_TABLE.get(code) if code else None


def error_code_of(exc: BaseException) -> str | None:
    return getattr(exc, "code", None) if isinstance(getattr(exc, "code", None), str) else None


@dataclass(frozen=True)
class RetryDecision:
    outcome: Literal["retry", "dead"]
    delay: float = 0.0
    stop_reason: StopReason | None = None
    classification: Classification | None = None


def decide_retry(
    policy: RetryPolicy,
    attempt: int,
    exc: BaseException,
    *,
    max_attempts: int | None = None,
    rng: random.Random | None = None,
) -> RetryDecision:
    """What to do with a job whose attempt ``attempt`` (1-based) raised ``exc``.

    Only the registry is read, never an attribute the error carries on its own: an unregistered
    code is unclassified, so a default can never dead-letter every first attempt of an app.
    """
    kind = declared_error_retry(error_code_of(exc))
    ceiling = max_attempts if max_attempts is not None else policy.attempts
    if kind == "terminal":
        return RetryDecision("dead", stop_reason="terminal", classification=kind)
    if attempt >= ceiling:
        return RetryDecision("dead", stop_reason="attempts-exhausted", classification=kind)
    if kind == "retry-after":
        named = getattr(exc, "retry_after", None)
        if isinstance(named, (int, float)) and named >= 0:
            return RetryDecision("retry", delay=min(float(named), policy.max_delay), classification=kind)
    return RetryDecision("retry", delay=policy.delay_after(attempt, rng), classification=kind)


def check_traceback_limit(limit: object) -> None:
    """A worker's traceback_limit: a whole number of characters, 0 (store none) or more."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"worker option traceback_limit={limit!r} must be a whole number of characters, 0 or more",
            fix="jobsctl worker MODULE --traceback-limit 8192",
        )


def failure_traceback(exc: BaseException, limit: int) -> str | None:
    """The failed attempt's traceback as Python prints it. Past ``limit`` characters only its last
    ``limit`` (where it was raised) are kept, from a line start, under a line saying how much was cut.
    None for an error that was never raised (a timeout's) or when ``limit`` is 0."""
    if limit <= 0 or exc.__traceback__ is None:
        return None
    text = storable("".join(traceback.format_exception(exc)).rstrip("\n"))
    if len(text) <= limit:
        return text
    tail = text[-limit:]
    start = tail.find("\n")
    if 0 <= start < len(tail) // 2:
        tail = tail[start + 1 :]
    return f"[... {len(text) - len(tail)} earlier characters cut (traceback_limit={limit})]\n{tail}"


def error_text(exc: BaseException) -> str:
    """An error as the engine stores it (an attempt's, a step's, a backfill's): its code and cause,
    else its type and message; storable whatever the message holds (a NUL, a lone surrogate)."""
    code = error_code_of(exc)
    return storable(f"{code}: {getattr(exc, 'cause', exc)}" if code else f"{type(exc).__name__}: {exc}")


def failure_fix(exc: BaseException) -> str | None:
    """What a failed attempt's error said to do about it: a JobsError's fix, stored with the
    attempt and shown with the dead letter; None for any other exception."""
    return storable(exc.fix) if isinstance(exc, JobsError) and exc.fix else None


def failure_text(exc: BaseException, decision: RetryDecision, attempt: int, max_attempts: int) -> str:
    """The row's last error. A dead letter's verdict is appended (I5), so 'dead at attempt 1 of 5'
    explains itself on every surface that shows the one failure field a row has."""
    head = error_text(exc)
    if decision.outcome == "dead":
        return f"{head} [stop: {decision.stop_reason} at attempt {attempt} of {max_attempts}]"
    return head


def failure_nack(
    claim: Claim,
    exc: BaseException,
    policy: RetryPolicy,
    *,
    attempt: int,
    max_attempts: int,
    now: datetime,
    traceback_limit: int = 8192,
) -> tuple[Nack, RetryDecision]:
    """The nack that settles an attempt failed by ``exc``, and the decision behind it: retried
    after the backoff or the delay the error named, or dead with its stop reason (I4, I5); its
    error text, code, traceback and fix as they are stored. The worker's rule, and the one
    engine.testing settles a failure by."""
    decision = decide_retry(policy, attempt, exc, max_attempts=max_attempts)
    nack = Nack(
        claim,
        decision.outcome,
        run_at=now + timedelta(seconds=decision.delay) if decision.outcome == "retry" else None,
        error=failure_text(exc, decision, attempt, max_attempts),
        error_code=error_code_of(exc) or X_HANDLER_FAILED,
        stop_reason=decision.stop_reason,
        traceback=failure_traceback(exc, traceback_limit),
        fix=failure_fix(exc),
    )
    return nack, decision
