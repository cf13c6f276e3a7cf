"""The outbox relay: moves committed stages into the queue, in stage order, each row once per lease.

One pass (``run_once``), while no row fails: ONE statement that locks a batch in (staged_at, id)
order, inserts its jobs and stamps the rows claimed and published (outbox_publish_batch: one round
trip, one commit). When a row would fail there (a live job holds its key, or any insert error),
that statement writes nothing and the pass goes in three steps: claim a batch under a lease in one
statement (I17), publish it through the enqueue path (a re-publish of a live job dedupes on its
idempotency key, I2), then retire the rows, fenced on the claim's token (I18). A publish that fails stops the batch: the rows before it are
retired, the failing row records the attempt and its error, and it and every later row are handed
back at once (I20), so a later row never overtakes it. A relay that stalled past its lease wakes
up owning nothing: its late mark or release changes no row another claim now holds.

Runs inside every worker (services/maintenance.py: maintained_worker) and alone (`jobsctl relay`,
which serves its probes from a RelayHealth the relay keeps: its heartbeats, a failed pass, its stop).
Idle, it waits for the NOTIFY a committed stage sends, or the poll interval (the fallback).
A config, ``run_once()`` returning what it did, and a thin loop (STYLE.md, convention 5).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from engine.clock import Clock, SystemClock
from engine.drivers.base import Driver
from engine.drivers.outbox_lease import DEFAULT_CLAIM_LEASE_MS, claim_lease_ms
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.ids import IdFactory
from engine.newjobs import CHUNK
from engine.options import Options, config_or_default, seconds, seconds_rule
from engine.retry import error_text
from engine.runtime import logs
from engine.runtime.failures import Failures
from engine.runtime.health import RelayHealth
from engine.runtime.metrics import Metrics
from engine.runtime.worker_config import MIN_LEASE_SECONDS
from engine.text import storable
from engine.types import EnqueueResult, NewJob

if TYPE_CHECKING:  # the outbox's rows, named in annotations only
    from engine.outbox_types import OutboxRow

GAUGE_CAP = 100_000  # the backlog gauge counts up to this many rows
HEARTBEAT_INTERVAL = 5.0  # seconds between a relay's heartbeats (jobs.outbox_relay)
# The shortest claim lease (engine/runtime/worker_config.py, MIN_LEASE_SECONDS): a claim must
# outlast the pass that holds it (the claim, the publish of the batch, row by row after a failure,
# and the mark), or another relay claims the rows again mid-publish and publishes them twice.
MIN_LEASE_MS = int(MIN_LEASE_SECONDS * 1000)

Publish = Callable[[Sequence[NewJob], datetime], Awaitable[list[EnqueueResult]]]
Hook = Callable[[str, Sequence["OutboxRow"]], Awaitable[None]]


@dataclass(frozen=True)
class RelayConfig(Options):
    batch_size: int = 250  # most rows one claim takes
    lease_ms: int | None = None  # the claim's lease; None: the default (engine/drivers/outbox_lease.py)
    poll_interval: float = 1.0  # the fallback when no NOTIFY arrives (seconds)
    heartbeat_interval: float = HEARTBEAT_INTERVAL  # how often the relay says it is alive
    gauges_interval: float = 10.0  # how often the backlog gauges are read (with metrics)
    id: str | None = None
    # A pass as one statement (claim, publish and mark together) while no row fails; False: claim,
    # publish and mark as three steps, the lease holding the rows between them.
    one_statement: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "lease_ms", claim_lease_ms(self.lease_ms))  # I19: X_INVARIANT here, never later
        if self.lease < MIN_LEASE_MS:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"RelayConfig lease_ms={self.lease} is below {MIN_LEASE_MS} ms: the claim would lapse before its "
                "batch is published, and another relay would claim and publish the same rows again",
                fix=f"RelayConfig(lease_ms={DEFAULT_CLAIM_LEASE_MS})",
            )
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"RelayConfig batch_size={self.batch_size!r} must be a whole number >= 1",
                fix="RelayConfig(batch_size=250)",
            )
        if not isinstance(self.one_statement, bool):
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"RelayConfig one_statement={self.one_statement!r} must be True or False",
                fix="RelayConfig(one_statement=True)",
            )
        for name in ("poll_interval", "heartbeat_interval", "gauges_interval"):
            value = getattr(self, name)
            if not seconds(value):
                raise JobsError(
                    X_INVALID_ARGUMENT,
                    cause=f"RelayConfig {name}={value!r} must be {seconds_rule()}",
                    fix=f"RelayConfig({name}=1.0)",
                )

    @property
    def lease(self) -> int:
        assert self.lease_ms is not None  # normalised at construction
        return self.lease_ms


def relay_health(config: RelayConfig, clock: Clock) -> RelayHealth:
    """The probes of a relay run with ``config``. It beats at a pass, at most every heartbeat
    interval, and an idle relay passes once a poll interval: the longer of the two is the most an
    answering database leaves between two beats."""
    return RelayHealth(clock, heartbeat_interval=max(config.heartbeat_interval, config.poll_interval))


@dataclass(frozen=True)
class RelayResult:
    claimed: int = 0
    published: tuple[str, ...] = ()  # outbox ids retired by this pass
    deduped: int = 0  # of those, how many a live job already held (a re-publish)
    failed: str | None = None  # the outbox id whose publish failed
    error: str | None = None
    released: tuple[str, ...] = ()  # handed back at once after the failure
    lapsed: tuple[str, ...] = field(default=())  # published, but the claim was gone when retiring them


class Relay:
    def __init__(
        self,
        driver: Driver,
        clock: Clock | None = None,
        *,
        config: RelayConfig | None = None,
        ids: IdFactory | None = None,
        metrics: Metrics | None = None,
        publish: Publish | None = None,
        hook: Hook | None = None,
        health: RelayHealth | None = None,
    ) -> None:
        self.driver = driver
        self.health = health  # what its probes read (relay_health), when it serves them
        self.clock = clock or SystemClock()
        self.config = cfg = config_or_default(RelayConfig, config)
        self.id = cfg.id or f"relay:{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.ids = ids or IdFactory(self.clock)
        self.metrics = metrics
        self._publish = publish or self._enqueue
        # A pass is one statement (outbox_publish_batch) unless a test or caller steps in between
        # its claim and its mark (a hook, a publish of its own): then claim, publish, mark.
        self._fused = cfg.one_statement and publish is None and hook is None
        # Awaited with ("claimed", rows) before the publish and ("published", rows) before the
        # retire: where a test holds a relay still (an asyncio.Event) instead of racing a sleep.
        self._hook = hook
        self._beat_at: float | None = None
        self._gauged_at: float | None = None
        self._stopping = False
        self._wake = asyncio.Event()
        self._current: asyncio.Future[RelayResult | None] | None = None
        # One pass at a time (run_once's), whoever asks: two passes of one relay would each skip
        # the rows the other has locked, and one could report nothing published while the other
        # is publishing.
        self._passing = asyncio.Lock()
        self.published_total = 0  # outbox rows this relay's passes have retired, counted as each pass ends
        # A pass that fails is said as what it is (engine/runtime/failures.py); one refused for
        # another reason than a lost connection makes its own probes (``health``) not ready.
        self.failures = Failures("relay", self.id, metrics, health)

    # --- one pass ------------------------------------------------------------------------------

    async def run_once(self) -> RelayResult:
        """One pass, after the pass in flight (the loop's, publish_pending's or another caller's),
        counted in ``published_total``."""
        async with self._passing:
            res = await self._one_pass()
            self.published_total += len(res.published)
            return res

    async def _one_pass(self) -> RelayResult:
        await self._beat()
        cfg, drv = self.config, self.driver
        token = str(uuid.uuid4())
        if self._fused:
            now = self.clock.now()
            ids = await drv.outbox_publish_batch(
                relay=self.id, token=token, limit=cfg.batch_size, now=now, job_ids=self.ids.many(cfg.batch_size, now)
            )
            if ids is not None:  # else a row cannot go as a plain insert: the row-by-row path below
                if self.metrics is not None:
                    self.metrics.outbox_published.inc(len(ids))
                await self._gauges()
                return RelayResult(claimed=len(ids), published=tuple(ids))
        rows = await drv.outbox_claim(
            relay=self.id, token=token, limit=cfg.batch_size, now=self.clock.now(), lease_ms=cfg.lease
        )
        if not rows:
            await self._gauges()
            return RelayResult()
        if self._hook is not None:
            await self._hook("claimed", rows)
        answers, failed_at, error = await self._publish_in_order(rows)
        if self._hook is not None:
            await self._hook("published", rows[: len(answers)])
        now = self.clock.now()
        done = rows[: len(answers)]
        marked = await drv.outbox_mark_published(
            token=token, published=[(r.id, a.id) for r, a in zip(done, answers)], now=now
        )
        retired = set(marked)
        lapsed = tuple(r.id for r in done if r.id not in retired)
        if lapsed:  # another relay reclaimed them after our lease lapsed: theirs to retire now
            logs.emit(logs.OUTBOX_LEASE_LAPSED, logging.WARNING, relay=self.id, rows=len(lapsed), ids=list(lapsed)[:20])
        released: list[str] = []
        failed: OutboxRow | None = None
        if failed_at is not None:
            failed = rows[failed_at]
            released = await drv.outbox_release(
                token=token, ids=[r.id for r in rows[failed_at:]], failed=failed.id, error=error, now=now
            )
            logs.emit(
                logs.OUTBOX_PUBLISH_FAILED,
                logging.WARNING,
                relay=self.id,
                outbox_id=failed.id,
                job=failed.name,
                attempts=failed.attempts + 1,
                error=error,
                released=len(released),
            )
        if self.metrics is not None:
            self.metrics.outbox_published.inc(len(marked))
            if failed is not None:
                self.metrics.outbox_failed.inc()
        await self._gauges()
        return RelayResult(
            claimed=len(rows),
            published=tuple(marked),
            deduped=sum(1 for a in answers if a.deduped),
            failed=None if failed is None else failed.id,
            error=error,
            released=tuple(released),
            lapsed=lapsed,
        )

    async def _publish_in_order(self, rows: Sequence[OutboxRow]) -> tuple[list[EnqueueResult], int | None, str | None]:
        """The batch in one call; when that fails, row by row in stage order up to the first row
        that fails: (answers of the rows published, index of the failing row, its error)."""
        now = self.clock.now()
        jobs = [r.new_job(jid) for r, jid in zip(rows, self.ids.many(len(rows), now))]
        try:
            return await self._publish(jobs, now), None, None
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if len(jobs) == 1:
                return [], 0, _describe(exc)
        answers: list[EnqueueResult] = []
        for i, j in enumerate(jobs):
            try:
                answers += await self._publish([j], now)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                return answers, i, _describe(exc)
        return answers, None, None  # the batch's failure did not recur row by row

    async def _enqueue(self, jobs: Sequence[NewJob], now: datetime) -> list[EnqueueResult]:
        """The path enqueue_many takes: one statement, or a statement per CHUNK in one transaction."""
        if len(jobs) <= CHUNK:
            return await self.driver.job_enqueue(jobs=jobs, now=now)
        chunks = (jobs[at : at + CHUNK] for at in range(0, len(jobs), CHUNK))
        return await self.driver.job_enqueue_chunks(chunks=chunks, now=now)

    async def _beat(self) -> None:
        mono = self.clock.monotonic()
        if self._beat_at is None or mono - self._beat_at >= self.config.heartbeat_interval:
            await self.driver.outbox_relay_beat(relay=self.id, now=self.clock.now())
            self._beat_at = mono
            if self.health is not None:  # a beat that landed: the relay is registered and its database answers
                self.health.started = True
                self.health.beat()

    async def _gauges(self) -> None:
        mono = self.clock.monotonic()
        if self.metrics is None or (
            self._gauged_at is not None and mono - self._gauged_at < self.config.gauges_interval
        ):
            return
        self._gauged_at = mono
        now = self.clock.now()
        stats = await self.driver.outbox_stats(now=now, count_cap=GAUGE_CAP, limit=0, alive_since=now)
        self.metrics.outbox_backlog.set(stats.backlog)
        age = 0.0 if stats.oldest_staged_at is None else max(0.0, (now - stats.oldest_staged_at).total_seconds())
        self.metrics.outbox_oldest.set(age)

    async def publish_pending(self) -> int:
        """Publish what is staged now, pass after pass until one publishes nothing (a failing row
        stops it, as it stops a pass), each after the pass in flight: how many rows this relay's
        passes published from the call on, the loop's included. What a burst worker asks before it
        ends (engine/runtime/burst.py)."""
        before = self.published_total
        while True:
            res = await self._pass()
            if res is None or not res.published:
                return self.published_total - before

    # --- the loop --------------------------------------------------------------------------------

    async def _pass(self) -> RelayResult | None:
        try:
            res = await self.run_once()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the next pass tries again
            self.failures.failed(exc)
            if self.health is not None:
                self.health.beat_failed(exc)
            return None
        self.failures.landed()
        return res

    async def run(self) -> None:
        """Pass after pass until ``stop()``: at once after a full batch, else after a wake-up."""
        while not self._stopping:
            # Shielded: cancelling the loop never cuts a pass between its publish and its retire.
            self._current = asyncio.ensure_future(self._pass())
            res = await asyncio.shield(self._current)
            if self._stopping:
                break
            if res is not None and res.claimed >= self.config.batch_size and res.failed is None:
                await asyncio.sleep(0)
                continue
            await self._idle(failed=res is None)

    async def _idle(self, *, failed: bool) -> None:
        self._wake.clear()
        waits: list[asyncio.Future[Any]] = [asyncio.ensure_future(self._wake.wait())]
        if failed:  # the database is away: the listener would fail too
            waits.append(asyncio.ensure_future(asyncio.sleep(self.config.poll_interval)))
        else:
            waits.append(asyncio.ensure_future(self._listen()))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()

    async def _listen(self) -> None:
        try:
            await self.driver.outbox_wait(timeout=self.config.poll_interval)
        except asyncio.CancelledError:
            raise
        except Exception:
            await asyncio.sleep(self.config.poll_interval)

    def wake(self) -> None:
        self._wake.set()

    async def stop(self) -> None:
        """Stop after the pass under way (awaited, so its rows are retired or handed back before the
        caller closes the pools, I14), and remove this relay's heartbeat row."""
        self._stopping = True
        if self.health is not None:
            self.health.stopped = True
        self._wake.set()
        if self._current is not None:
            await asyncio.wait([self._current])
        try:
            await self.driver.outbox_relay_gone(relay=self.id)
        except Exception:  # the row ages out of "alive" on its own
            pass


def _describe(exc: BaseException) -> str:
    """A publish error as the row keeps it: the engine's error text, else the first line only."""
    if isinstance(exc, JobsError):
        return error_text(exc)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return storable(f"{type(exc).__name__}: {text}") if text else type(exc).__name__
