"""What a worker's loops, and the services beside them, say when a call fails: one classification
and one report for all of them, keyed by ``what`` failed (the `what` label and field):
``claim``, ``heartbeat``, ``renew``, ``listen``, ``presence``, ``gauges``, ``ack`` and ``nack``
(settle's retries), ``relay`` (a relay's pass), ``scheduler`` (a scheduler's tick),
``maintenance`` (a maintenance pass).

Two kinds, told apart by lost_connection():

- A lost connection (ConnectionLost, which every driver raises for a connection that failed under
  a call; or an OSError: a socket's own, or TimeoutError, a call that did not answer within its
  deadline): logged as `jobs.worker.reconnecting` (warning), counted in
  jobs_worker_reconnects_total{what}; the next call that lands logs `jobs.worker.reconnected`.
- Anything else (the statement refused: a column or a table it reads is missing, the role lost a
  privilege, a statement timeout; or a bug): reconnecting cannot fix it, so it is said as what it
  is: `jobs.worker.error` (error level: its code, its SQLSTATE when the database gave one, its
  message, the fix when the engine knows one, and how many calls of the streak failed so),
  counted in jobs_worker_errors_total{what,code}; the next call that lands logs
  `jobs.worker.recovered`. A loop given a Health (the claim, the heartbeat, the renewal; a
  relay's or a scheduler's own probes) makes its process not ready meanwhile.

Either kind is retried, at the loop's own pace: a migration or a GRANT applied meanwhile lets the
process go on without a restart. A loop that fails on a short timer (presence, gauges) logs once
a streak (``every=False``); each failure is counted all the same.
"""

from __future__ import annotations

import asyncio
import logging

from engine.errors import ConnectionLost, JobsError
from engine.runtime import logs
from engine.runtime.health import Health
from engine.runtime.metrics import Metrics


class Backoff:
    """Retry pacing: 50 ms doubling to 2 s. Real time on purpose: it waits on the network,
    not on a deadline of the domain (a fake clock would freeze the retry)."""

    def __init__(self, first: float = 0.05, ceiling: float = 2.0) -> None:
        self.first, self.ceiling, self.next = first, ceiling, first

    def take(self) -> float:
        """The next delay, the one after it doubled (up to the ceiling)."""
        delay, self.next = self.next, min(self.ceiling, self.next * 2)
        return delay

    async def wait(self) -> None:
        await asyncio.sleep(self.take())

    def reset(self) -> None:
        self.next = self.first


def lost_connection(exc: BaseException) -> bool:
    """Whether ``exc`` is the connection's (a reconnect may fix it), not the call's."""
    return isinstance(exc, (ConnectionLost, OSError))


def error_code(exc: BaseException) -> str:
    """What kind of error ``exc`` is, as a metric's label: the engine's code (X_PERMISSION_DENIED),
    else its class's name (UndefinedColumn, TypeError)."""
    return exc.code if isinstance(exc, JobsError) else type(exc).__name__


def sqlstate(exc: BaseException) -> str | None:
    """The SQLSTATE the database answered with, on ``exc`` or on the error it was raised from."""
    for e in (exc, exc.__cause__):
        state = getattr(e, "sqlstate", None)
        if isinstance(state, str) and state:
            return state
    return None


def message(exc: BaseException) -> str:
    if isinstance(exc, JobsError):
        return exc.cause
    said = str(exc).strip().splitlines()
    return said[0] if said else type(exc).__name__


def reconnecting(metrics: Metrics | None, what: str, worker: str, exc: BaseException) -> None:
    """The one report of a call that lost its connection and is retried."""
    if metrics is not None:
        metrics.reconnects.labels(what).inc()
    logs.emit(logs.WORKER_RECONNECTING, logging.WARNING, what=what, worker=worker, error=logs.short_error(exc))


class Failures:
    """One loop's streak of failed calls: each said as what it is (the module's docstring), and
    its end said once a call lands. ``landed()`` on a loop with no streak does nothing else."""

    __slots__ = ("what", "worker", "metrics", "health", "every", "backoff", "lost", "errors")

    def __init__(
        self, what: str, worker: str, metrics: Metrics | None, health: Health | None = None, *, every: bool = True
    ) -> None:
        self.what, self.worker, self.metrics, self.health, self.every = what, worker, metrics, health, every
        self.backoff = Backoff()  # for a loop that retries at once (the claim, LISTEN); reset by landed()
        self.lost = 0  # calls of this streak that lost their connection
        self.errors = 0  # calls of this streak that failed for another reason

    @property
    def failing(self) -> bool:
        """A call of this loop failed, and none has landed since."""
        return bool(self.lost or self.errors)

    def failed(self, exc: BaseException) -> None:
        """Report ``exc``, one of this loop's failed calls."""
        if lost_connection(exc):
            self.lost += 1
            if self.every or self.lost == 1:
                reconnecting(self.metrics, self.what, self.worker, exc)
            elif self.metrics is not None:
                self.metrics.reconnects.labels(self.what).inc()
            return
        self.errors += 1
        code, said = error_code(exc), message(exc)
        if self.metrics is not None:
            self.metrics.errors.labels(self.what, code).inc()
        if self.health is not None:
            self.health.failing(self.what, f"{code}: {said}")
        if not (self.every or self.errors == 1):
            return
        fields: dict[str, object] = {"what": self.what, "worker": self.worker, "code": code, "error": said}
        state = sqlstate(exc)
        if state is not None:
            fields["sqlstate"] = state
        if isinstance(exc, JobsError) and exc.fix:
            fields["fix"] = exc.fix
        logs.emit(logs.WORKER_ERROR, logging.ERROR, failures=self.errors, **fields)

    async def failed_wait(self, exc: BaseException) -> None:
        """Report ``exc``, then wait the backoff before the next call."""
        self.failed(exc)
        await self.backoff.wait()

    def landed(self) -> None:
        """A call landed: the streak, if there was one, is over."""
        if not (self.lost or self.errors):
            return
        self.backoff.reset()
        if self.lost:
            logs.emit(logs.WORKER_RECONNECTED, what=self.what, worker=self.worker)
        if self.errors:
            if self.health is not None:
                self.health.recovered(self.what)
            logs.emit(logs.WORKER_RECOVERED, what=self.what, worker=self.worker, failures=self.errors)
        self.lost = self.errors = 0
