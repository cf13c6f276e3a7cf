"""A worker's health as an orchestrator's probes read it: ``/livez`` and ``/readyz`` on the
metrics port (`jobsctl worker --metrics-port`), or ``worker.health`` for an app that embeds one;
`jobsctl relay`'s (RelayHealth) and `jobsctl scheduler`'s (SchedulerHealth) the same way.

Live: the worker's event loop turns. A ticker on the loop notes each turn (every TICK seconds);
a handler that blocks the loop (``time.sleep`` in an ``async def``, a CPU-bound loop with no
await) stops it, and past STALLED seconds without a turn the worker is not live: its leases are
not renewed either, so a restart hands its jobs to another worker sooner than their leases would.
A worker waiting for its database to answer at start, or draining, is live.

Ready: the worker has registered (its start reached the database), is not draining, neither its
latest claim, nor its latest heartbeat, nor its latest lease renewal failed for another reason
than a lost connection (engine/runtime/failures.py: a statement the database refuses, a bug),
and the database answered one of its heartbeats within three heartbeat intervals. A relay's or a
scheduler's own probes read their passes or ticks the same way.

Each answer is (ok, one line saying why). The probes are read from the metrics server's thread:
the worker writes plain floats and flags, the reader only compares them.
"""

from __future__ import annotations

from engine.clock import Clock
from engine.runtime import logs

TICK = 1.0  # seconds between the ticker's turns
STALLED = 30.0  # seconds without a turn past which the loop counts as blocked
# What /readyz calls the calls of each loop whose failures it reads (engine/runtime/failures.py).
_CALLS = {
    "claim": "claims",
    "heartbeat": "heartbeats",
    "renew": "lease renewals",
    "relay": "passes",
    "scheduler": "ticks",
}


class Health:
    # What /livez blames a loop that has not turned for STALLED seconds on (a worker's: a handler),
    # and what /readyz says when ready.
    stall_hint = (
        "a handler is blocking it "
        "(time.sleep or CPU-bound work in an async def; run it in a sync def, which gets a thread)"
    )
    ready_text = "registered and heartbeating"
    beats = "its heartbeat"  # what /readyz says the database has not answered

    def __init__(self, clock: Clock, *, heartbeat_interval: float) -> None:
        self.clock = clock
        self.heartbeat_interval = heartbeat_interval
        self.started = False  # registered: the start reached the database
        self.draining = False
        self.stopped = False
        self.turned_at = clock.monotonic()  # the ticker's last turn of the loop
        self.beat_at = self.turned_at  # the last heartbeat (or the registration) that landed
        self.beat_error: str | None = None  # why the latest heartbeat failed, while none has landed since
        # What failed for another reason than a lost connection, and why (engine/runtime/failures.py),
        # until a call of it lands. Replaced whole on each change: the probes' thread reads it.
        self.errors: dict[str, str] = {}

    async def tick(self) -> None:
        """The ticker: note each turn of the loop, until cancelled."""
        while True:
            self.turned_at = self.clock.monotonic()
            await self.clock.sleep(TICK)

    def beat(self) -> None:
        self.beat_at, self.beat_error = self.clock.monotonic(), None

    def beat_failed(self, exc: BaseException) -> None:
        self.beat_error = logs.short_error(exc)

    def failing(self, what: str, error: str) -> None:
        self.errors = {**self.errors, what: error}

    def recovered(self, what: str) -> None:
        self.errors = {k: v for k, v in self.errors.items() if k != what}

    def live(self) -> tuple[bool, str]:
        if self.stopped:
            return True, "stopped"
        still = self.clock.monotonic() - self.turned_at
        if still > STALLED:
            return False, f"the event loop has not turned for {still:.0f} s: {self.stall_hint}"
        return True, "the event loop turns"

    def ready(self) -> tuple[bool, str]:
        if self.stopped:
            return False, "stopped"
        if not self.started:
            return False, "starting: waiting for the database to answer"
        if self.draining:
            return False, "draining: it claims no more work"
        errors = self.errors
        if errors:
            what, error = next(iter(errors.items()))
            return False, f"its {_CALLS.get(what, what)} fail, retried ({error})"
        since = self.clock.monotonic() - self.beat_at
        if since > 3 * self.heartbeat_interval:
            why = f" ({self.beat_error})" if self.beat_error else ""
            return False, f"the database has not answered {self.beats} for {since:.0f} s{why}"
        return True, self.ready_text


class RelayHealth(Health):
    """`jobsctl relay`'s probes: live while its loop turns; ready once its start reached the
    database, and while the heartbeats its passes send (jobs.outbox_relay) land. It runs no
    handler and never drains: a stop makes it "stopped". ``heartbeat_interval`` is the longest
    an idle relay goes between two beats (engine/services/relay.py, relay_health)."""

    stall_hint = "a blocking call holds the relay's loop"
    ready_text = "publishing: its database answers its heartbeats"


class SchedulerHealth(Health):
    """`jobsctl scheduler`'s probes: live while its loop turns; ready once its start reached the
    database, and while its ticks land (a follower's as a leader's: each reads the leader's lease,
    and a leader's writes). It runs no handler and never drains: a stop makes it "stopped".
    ``heartbeat_interval`` is the longest between two ticks (engine/services/scheduler.py,
    scheduler_health)."""

    stall_hint = "a blocking call holds the scheduler's loop"
    ready_text = "scheduling: its database answers its ticks"
    beats = "its ticks"
