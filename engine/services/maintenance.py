"""Maintenance, run by workers under ONE leader lease per fleet (jobs.leader, fenced by its term):

- the rescuer returns running rows whose lease lapsed to `ready` (a killed worker's jobs), the
  lost attempt counted and recorded as a lease loss on the job's history;
- the pruner drops each bucket of settled rows past a retention whole, with their steps,
  attempts and history (engine/services/buckets.py), and deletes the rest past it in bounded
  batches so it never holds long locks; dead letters are kept for their own, longer retention
  (an operator acts on them first);
- the throughput rollup counts each closed minute's completions per queue once, for the queues
  view's sparkline (which then reads rolled minutes rather than an hour of rows every refresh);
- the reaper deletes the registration rows of workers whose heartbeat stopped;
- the outbox pruner deletes published outbox rows past their retention (the audit trail);
- the audit log's entries past `audit_retention` (a year by default) are deleted, a batch a pass;
- index upkeep rebuilds a GIN index over `input` grown past its size after its last rebuild:
  a GIN keeps a key for every value it ever indexed (vacuum empties a key, never removes it),
  so inputs holding unique values grow it for ever while the pruner keeps the rows bounded;
- table upkeep vacuums a jobs table whose dead row versions passed a threshold: every job leaves
  two in jobs.job, and autovacuum, once a minute and throttled, lets the hot table grow to
  hundreds of MB of them under load (docs/internals.md, "Table upkeep").

A config, `run_once()` returning what it did, and a thin loop (STYLE.md, convention 5).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from engine.audit import RETENTION as AUDIT_RETENTION
from engine.clock import Clock
from engine.drivers.base import Driver
from engine.errors import X_INVALID_ARGUMENT, X_PERMISSION_DENIED, JobsError
from engine.options import Options, config_or_default, finite_positive, seconds, seconds_rule
from engine.runtime import logs
from engine.runtime.execute import Execution
from engine.runtime.failures import Failures
from engine.runtime.metrics import Metrics
from engine.runtime.worker import Worker, WorkerConfig, as_registry
from engine.runtime.worker_config import check_leader_lease, check_reap_window
from engine.services.buckets import Buckets
from engine.services.upkeep import MaintenanceResult, bloated, grown

LEADER = "maintenance"
REINDEX_MIN_BYTES = 16 * 1024 * 1024
# A vacuum that took d seconds is followed by none of the same table for 9 d: upkeep spends at
# most a tenth of the time on one table (a vacuum's cost is a scan of each of its indexes,
# whatever the dead count).
VACUUM_DUTY = 0.1


@dataclass(frozen=True)
class MaintenanceConfig(Options):
    interval: float = 5.0  # seconds between passes
    leader_lease: float = 30.0
    rescue_batch: int = 500
    prune_batch: int = 1000
    prune_batches_per_pass: int = 10
    retention: float = 7 * 86400.0  # completed and cancelled rows (dropped with their bucket: at most 1.25x)
    dead_retention: float = 30 * 86400.0  # dead letters: longer, so an operator can act first
    worker_reap_after: float = 600.0  # a worker row whose heartbeat is older than this is gone
    # A minute's completions are rolled up this long after it ends: a completion recorded later
    # than that (a worker clock behind the leader's by more) falls in no minute of the sparkline.
    # Leases already assume clocks agree to well under lease_seconds (30 s by default). The
    # queues view counts the rows of the minutes not rolled yet: at most settle + 60 s of them.
    throughput_settle: float = 30.0
    outbox_retention: float = 7 * 86400.0  # published outbox rows: the audit trail, then pruned
    audit_retention: float = AUDIT_RETENTION  # the audit log's entries (engine/audit.py)
    # Index upkeep: every reindex_interval seconds (None: never) the leader rebuilds a GIN index of
    # the jobs tables grown past max(reindex_min_bytes, reindex_growth x its size after its last
    # rebuild), with REINDEX INDEX CONCURRENTLY (the role must own the schema).
    reindex_interval: float | None = 600.0
    reindex_growth: float = 2.0
    reindex_min_bytes: int = REINDEX_MIN_BYTES
    # Table upkeep, off by default (None: autovacuum's alone): each pass the leader VACUUMs a
    # table of the jobs schema holding more dead row versions than vacuum_threshold (10_000 is a
    # start) + vacuum_scale_factor x its live rows; a plain VACUUM, which never blocks the hot
    # path (the role must own the table). README, "Vacuum at a high rate", has its trade-off.
    vacuum_threshold: int | None = None
    vacuum_scale_factor: float = 0.2

    def __post_init__(self) -> None:
        self._check_reindex()
        self._check_vacuum()
        for name in (
            "interval",
            "leader_lease",
            "retention",
            "dead_retention",
            "worker_reap_after",
            "throughput_settle",
            "outbox_retention",
            "audit_retention",
        ):
            value = getattr(self, name)
            if not seconds(value):
                raise JobsError(
                    X_INVALID_ARGUMENT,
                    cause=f"MaintenanceConfig {name}={value!r} must be {seconds_rule()}",
                    fix=f"MaintenanceConfig({name}=60)",
                )
        check_leader_lease("MaintenanceConfig", self.leader_lease, self.interval)
        reap = self.worker_reap_after  # the fleet's rows, of intervals unknown here: held to the default
        check_reap_window(
            reap, given=f"MaintenanceConfig worker_reap_after={reap:g}", fix="MaintenanceConfig(worker_reap_after=600)"
        )
        for name in ("rescue_batch", "prune_batch", "prune_batches_per_pass"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise JobsError(
                    X_INVALID_ARGUMENT,
                    cause=f"MaintenanceConfig {name}={value!r} must be a whole number >= 1",
                    fix=f"MaintenanceConfig({name}=500)",
                )
        if self.dead_retention < self.retention:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"dead_retention={self.dead_retention} is shorter than retention={self.retention}",
                fix=f"MaintenanceConfig(dead_retention={self.retention * 4})",
            )

    def _check_reindex(self) -> None:
        every, growth, least = self.reindex_interval, self.reindex_growth, self.reindex_min_bytes
        if every is not None and not seconds(every):
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"MaintenanceConfig reindex_interval={every!r} must be {seconds_rule()}, or None "
                "for no index upkeep",
                fix="MaintenanceConfig(reindex_interval=600)",
            )
        if not finite_positive(growth) or not growth > 1:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"MaintenanceConfig reindex_growth={growth!r} must be > 1 (the factor an index grows by "
                "past its size after its last rebuild before it is rebuilt again)",
                fix="MaintenanceConfig(reindex_growth=2.0)",
            )
        if not isinstance(least, int) or isinstance(least, bool) or least < 0:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"MaintenanceConfig reindex_min_bytes={least!r} must be a whole number of bytes >= 0",
                fix=f"MaintenanceConfig(reindex_min_bytes={REINDEX_MIN_BYTES})",
            )
        if every is None and (growth != 2.0 or least != REINDEX_MIN_BYTES):
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"reindex_growth={growth!r} and reindex_min_bytes={least!r} do nothing with "
                "reindex_interval=None (index upkeep off)",
                fix="MaintenanceConfig(reindex_interval=600)",
            )

    def _check_vacuum(self) -> None:
        least, scale = self.vacuum_threshold, self.vacuum_scale_factor
        if least is not None and (not isinstance(least, int) or isinstance(least, bool) or least < 1):
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"MaintenanceConfig vacuum_threshold={least!r} must be a whole number of dead rows >= 1, "
                "or None to leave the jobs tables to autovacuum",
                fix="MaintenanceConfig(vacuum_threshold=10_000)",
            )
        if not isinstance(scale, (int, float)) or isinstance(scale, bool) or not scale >= 0:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"MaintenanceConfig vacuum_scale_factor={scale!r} must be >= 0 (the share of a table's "
                "live rows its dead rows pass, beyond vacuum_threshold, before the leader vacuums it)",
                fix="MaintenanceConfig(vacuum_scale_factor=0.2)",
            )
        if least is None and scale != 0.2:  # off
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"vacuum_scale_factor={scale!r} does nothing with vacuum_threshold=None (table upkeep off)",
                fix="MaintenanceConfig(vacuum_threshold=10_000)",
            )


class Maintenance:
    def __init__(
        self,
        driver: Driver,
        clock: Clock,
        *,
        holder: str,
        config: MaintenanceConfig | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.driver, self.clock, self.holder = driver, clock, holder
        self.failures = Failures("maintenance", holder, metrics)
        self.config = config_or_default(MaintenanceConfig, config)
        self.term: int | None = None
        self.reindex_due: datetime | None = None  # this leader's next index check; None: at once
        self.vacuum_due: dict[str, datetime] = {}  # per table, the earliest next vacuum (VACUUM_DUTY)
        self.vacuum_refused: set[str] = set()  # tables this role may not vacuum, told once
        self.buckets = Buckets(driver, leader=LEADER, holder=holder)

    async def run_once(self) -> MaintenanceResult:
        cfg, now = self.config, self.clock.now()
        term = await self.driver.leader_acquire(
            name=LEADER, holder=self.holder, now=now, lease_seconds=cfg.leader_lease
        )
        if term is None:
            self.term = None
            return MaintenanceResult(False)
        if term != self.term:
            logs.emit(logs.LEADER_ACQUIRED, leader=LEADER, holder=self.holder, term=term)
        self.term = term
        rescued = await self.driver.job_rescue(
            leader=LEADER, holder=self.holder, term=term, now=now, limit=cfg.rescue_batch
        )
        if rescued:
            logs.emit(
                logs.MAINTENANCE_RESCUED, logging.WARNING, count=len(rescued), job_ids=[j for j, _ in rescued][:20]
            )
        # Before the pruner: a minute's completions are counted while their rows still exist.
        rolled = await self.driver.throughput_rollup(
            leader=LEADER, holder=self.holder, term=term, now=now, settle=cfg.throughput_settle
        )
        pruned = await self.buckets.upkeep(term, now, retention=cfg.retention, dead_retention=cfg.dead_retention)
        before = now - timedelta(seconds=cfg.retention)
        dead_before = now - timedelta(seconds=cfg.dead_retention)
        for _ in range(cfg.prune_batches_per_pass):
            batch = await self.driver.job_prune(
                leader=LEADER,
                holder=self.holder,
                term=term,
                now=now,
                before=before,
                dead_before=dead_before,
                limit=cfg.prune_batch,
            )
            pruned += len(batch)
            if len(batch) < cfg.prune_batch:
                break
            await asyncio.sleep(0)  # between batches: never one long transaction, never a hogged loop
        if pruned:
            logs.emit(logs.MAINTENANCE_PRUNED, count=pruned)
        reaped = await self.driver.worker_reap(before=now - timedelta(seconds=cfg.worker_reap_after))
        outbox_pruned = await self.driver.outbox_prune(
            leader=LEADER,
            holder=self.holder,
            term=term,
            now=now,
            before=now - timedelta(seconds=cfg.outbox_retention),
            limit=cfg.prune_batch,
        )
        cut = now - timedelta(seconds=cfg.audit_retention)
        audit_pruned = await self.driver.audit_prune(cutoff=cut, limit=cfg.prune_batch)
        reindexed = await self._index_upkeep(term, now)
        vacuumed = await self._table_upkeep(term, now)
        return MaintenanceResult(
            True,
            term,
            tuple(j for j, _ in rescued),
            pruned,
            tuple(reaped),
            rolled,
            outbox_pruned,
            reindexed,
            vacuumed,
            audit_pruned,
        )

    async def _table_upkeep(self, term: int, now: datetime) -> tuple[str, ...]:
        """Each table of the jobs schema past its dead-row threshold vacuumed in turn, unless its
        last vacuum was too recent (VACUUM_DUTY) or a transaction older than that vacuum is
        still open (what died since is visible to it: nothing to remove). A table this role may
        not vacuum is told once (a warning with the fix) and left to autovacuum."""
        cfg = self.config
        if cfg.vacuum_threshold is None:
            return ()
        done: list[str] = []
        for table in await self.driver.table_rows(leader=LEADER, holder=self.holder, term=term, now=now):
            if not bloated(table, threshold=cfg.vacuum_threshold, scale=cfg.vacuum_scale_factor):
                continue
            if table.held or now < self.vacuum_due.get(table.table, now):
                continue  # nothing it could remove yet, or its last vacuum too recent
            if not table.owned:
                if table.table not in self.vacuum_refused:
                    self.vacuum_refused.add(table.table)
                    logs.emit(
                        logs.MAINTENANCE_VACUUM_REFUSED,
                        logging.WARNING,
                        table=table.table,
                        dead=table.dead,
                        cause="only the table's owner may vacuum it; until autovacuum visits, claims step over "
                        f"its dead row versions (where the worker cannot be the owner, tune autovacuum for "
                        f"{table.table}: README, 'Vacuum at a high rate')",
                        fix="run jobsctl worker as the jobs schema's owner (the role that ran jobsctl migrate)",
                    )
                continue
            seconds = await self.driver.table_vacuum(table=table.table)
            self.vacuum_due[table.table] = self.clock.now() + timedelta(seconds=seconds * (1 / VACUUM_DUTY - 1))
            logs.emit(
                logs.MAINTENANCE_VACUUMED,
                logging.DEBUG,
                table=table.table,
                dead=table.dead,
                live=table.live,
                seconds=round(seconds, 3),
            )
            done.append(table.table)
        return tuple(done)

    async def _index_upkeep(self, term: int, now: datetime) -> tuple[str, ...]:
        """Every reindex_interval, one check of the GIN sizes; each grown one rebuilt in turn.
        A role that may not rebuild is told once a check (a warning with the fix) and the pass
        goes on. A rebuild runs for as long as it takes, within this pass: the lease may pass to
        another worker meanwhile (its rescuer then runs there), and no rebuild of that worker starts
        while this one runs (index_rebuild's lock)."""
        cfg = self.config
        if cfg.reindex_interval is None or (self.reindex_due is not None and now < self.reindex_due):
            return ()
        self.reindex_due = now + timedelta(seconds=cfg.reindex_interval)
        sizes = await self.driver.index_sizes(leader=LEADER, holder=self.holder, term=term, now=now)
        done: list[str] = []
        for size in sizes:
            if not grown(size, growth=cfg.reindex_growth, min_bytes=cfg.reindex_min_bytes):
                continue
            try:
                rebuilt = await self.driver.index_rebuild(
                    leader=LEADER,
                    holder=self.holder,
                    term=term,
                    now=self.clock.now(),
                    index=size.index,
                    before=size.bytes,
                )
            except JobsError as err:
                if err.code != X_PERMISSION_DENIED:
                    raise
                logs.emit(
                    logs.MAINTENANCE_REINDEX_REFUSED, logging.WARNING, index=size.index, cause=err.cause, fix=err.fix
                )
                break
            if rebuilt is None:  # another rebuild under way, or the lease moved on
                break
            logs.emit(
                logs.MAINTENANCE_REINDEXED,
                index=rebuilt.index,
                bytes_before=rebuilt.before,
                bytes_after=rebuilt.after,
                seconds=round(rebuilt.seconds, 3),
            )
            done.append(rebuilt.index)
        return tuple(done)

    async def run(self) -> None:
        while True:
            try:
                await self.run_once()
                self.failures.landed()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # said as what it is (engine/runtime/failures.py); the next pass tries again
                self.failures.failed(exc)
            await self.clock.sleep(self.config.interval)

    async def step_down(self) -> None:
        if self.term is not None:
            try:
                await self.driver.leader_release(name=LEADER, holder=self.holder, term=self.term, now=self.clock.now())
            except Exception:  # the lease lapses on its own
                pass
            self.term = None


def maintained_worker(
    driver: Driver,
    jobs: object,
    *,
    clock: Clock | None = None,
    maintenance: bool = True,
    maintenance_config: MaintenanceConfig | None = None,
    relay: bool = True,
    relay_config: Any = None,
    scheduler: bool = True,
    scheduler_config: Any = None,
    metrics: Metrics | None = None,
    on_execution: Callable[[Execution], Any] | None = None,
    tracing: Any = None,
    engine: Callable[[], Any] | None = None,
    **options: Any,
) -> Worker:
    """A worker that also runs maintenance under the fleet's leader lease, the outbox relay
    (``relay=False`` leaves it out; ``relay_config``: a RelayConfig, else one polling at the
    worker's ``poll_interval``) and the cron scheduler for the
    tasks it serves (engine/services/scheduler.py): what `jobsctl worker` and `Engine.worker()`
    start. ``options`` are `WorkerConfig` fields; ``tracing`` True (or an engine.tracing.Tracing)
    makes each run an OpenTelemetry span in its enqueuer's trace; ``engine`` makes what its handlers'
    ``ctx.engine`` answers, on first use."""
    from engine.clock import SystemClock
    from engine.tracing import tracing_for

    clock = clock or SystemClock()
    registry = as_registry(jobs)
    tasks = any(h.is_task for h in registry)
    for name, given, runs, why in (
        ("maintenance", maintenance_config, maintenance, "maintenance=False"),
        ("relay", relay_config, relay, "relay=False"),
        ("scheduler", scheduler_config, scheduler and tasks, "no job is a @task" if scheduler else "scheduler=False"),
    ):
        if given is not None and not runs:  # a config nothing would read: refused, not dropped
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"{name}_config is given, and {why}: no {name} runs to read it",
                fix=f"leave {name}_config out",
            )
    queues = options.pop("queues", None)
    # A string reaches WorkerConfig as it is, to be refused there (tuple() would split it into letters).
    asked = queues if isinstance(queues, str) else tuple(queues or ())
    config = WorkerConfig(queues=asked, **options)  # type: ignore[arg-type]
    if maintenance:  # its own leader never reaps its row between two of its heartbeats
        check_reap_window(
            config_or_default(MaintenanceConfig, maintenance_config).worker_reap_after, config.heartbeat_interval
        )
    w = Worker(
        driver,
        registry,
        config=config,
        clock=clock,
        metrics=metrics,
        on_execution=on_execution,
        tracing=tracing_for(tracing),
        engine=engine,
    )
    if maintenance:
        m = Maintenance(driver, clock, holder=w.id, config=maintenance_config, metrics=w.metrics)
        w.add_service(m.run, on_drain=m.step_down)
        w.maintenance = m
    if relay:
        from engine.services.relay import Relay, RelayConfig

        # Without a config of its own, the relay's fallback poll is the worker's: one interval
        # says how long either waits when no NOTIFY arrives.
        paced = relay_config if relay_config is not None else RelayConfig(poll_interval=config.poll_interval)
        r = Relay(driver, clock, config=paced, metrics=w.metrics)
        w.add_service(r.run, on_drain=r.stop)
        w.relay = r
    if scheduler and tasks:  # else neither the scheduler nor its cron parser loads
        from engine.services.scheduler import Scheduler
        from engine.tasks import tasks_of

        s = Scheduler(driver, clock, tasks_of(registry), holder=w.id, config=scheduler_config, metrics=w.metrics)
        w.add_service(s.run, on_drain=s.step_down)
        w.scheduler = s
    return w
