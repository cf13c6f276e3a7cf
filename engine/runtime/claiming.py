"""What the worker's claim loop does with a claim that failed (engine/runtime/worker.py).

Two kinds, told apart by the one error every driver raises for a connection that failed under a
call, ConnectionLost (engine/drivers/transient.py classifies PostgreSQL's):

- A lost connection: logged as `jobs.worker.reconnecting` (warning), counted in
  jobs_worker_reconnects_total{what="claim"}, and retried; the next claim that lands logs
  `jobs.worker.reconnected`. The heartbeats, failing alike, make the worker not ready.
- Anything else (the statement refused: a column or a table the claim reads is missing, the role
  lost a privilege, a statement timeout; or a bug in the claim path): reconnecting cannot fix it,
  so it is said as what it is. Each one is logged as `jobs.worker.claim-failed` (error: its code,
  its SQLSTATE when the database gave one, its message and the fix when the engine knows one),
  counted in jobs_worker_claim_errors_total{code}, and makes the worker not ready (/readyz) until
  a claim lands again, which logs `jobs.worker.claim-recovered`. It is retried all the same: a
  migration or a GRANT applied meanwhile lets the worker go on without a restart.

Both wait the same capped backoff (Backoff: 50 ms doubling to 2 s) between tries.
"""

from __future__ import annotations

import logging

from engine.errors import ConnectionLost, JobsError
from engine.runtime import logs
from engine.runtime.health import Health
from engine.runtime.metrics import Metrics
from engine.runtime.settle import Backoff


def error_code(exc: BaseException) -> str:
    """What kind of error ``exc`` is, as a metric's label: the engine's code (X_PERMISSION_DENIED),
    else its class's name (UndefinedColumn, TypeError)."""
    return exc.code if isinstance(exc, JobsError) else type(exc).__name__


def _sqlstate(exc: BaseException) -> str | None:
    """The SQLSTATE the database answered with, on ``exc`` or on the error it was raised from."""
    for e in (exc, exc.__cause__):
        state = getattr(e, "sqlstate", None)
        if isinstance(state, str) and state:
            return state
    return None


def _message(exc: BaseException) -> str:
    if isinstance(exc, JobsError):
        return exc.cause
    said = str(exc).strip().splitlines()
    return said[0] if said else type(exc).__name__


class ClaimFailures:
    """One worker's streak of failed claims: what each is said as, and the wait before the next."""

    def __init__(self, worker: str, metrics: Metrics, health: Health) -> None:
        self.worker, self.metrics, self.health = worker, metrics, health
        self.backoff = Backoff()
        self.lost = False  # a claim of this streak lost its connection
        self.errors = 0  # claims of this streak that failed for another reason

    async def failed(self, exc: Exception) -> None:
        """Report ``exc``, then wait the backoff before the next claim."""
        if isinstance(exc, ConnectionLost):
            self.lost = True
            self.metrics.reconnects.labels("claim").inc()
            logs.emit(
                logs.WORKER_RECONNECTING, logging.WARNING, what="claim", worker=self.worker, error=logs.short_error(exc)
            )
        else:
            self.errors += 1
            code, message = error_code(exc), _message(exc)
            self.metrics.claim_errors.labels(code).inc()
            self.health.claim_failed(f"{code}: {message}")
            fields: dict[str, object] = {"worker": self.worker, "code": code, "error": message}
            state = _sqlstate(exc)
            if state is not None:
                fields["sqlstate"] = state
            if isinstance(exc, JobsError) and exc.fix:
                fields["fix"] = exc.fix
            logs.emit(logs.WORKER_CLAIM_FAILED, logging.ERROR, failures=self.errors, **fields)
        await self.backoff.wait()

    def landed(self) -> None:
        """A claim landed: the streak, if there was one, is over."""
        if not (self.lost or self.errors):
            return
        self.backoff.reset()
        if self.lost:
            logs.emit(logs.WORKER_RECONNECTED, what="claim", worker=self.worker)
        if self.errors:
            self.health.claimed()
            logs.emit(logs.WORKER_CLAIM_RECOVERED, worker=self.worker, failures=self.errors)
        self.lost, self.errors = False, 0
