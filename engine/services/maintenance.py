"""Maintenance, run by workers under ONE leader lease per fleet (jobs.leader, fenced by its term):

- the rescuer returns running rows whose lease lapsed to `ready` (a killed worker's jobs), the
  lost attempt counted and recorded as a lease loss on the job's history;
- the pruner deletes completed and cancelled rows past a retention, with their steps, attempts
  and history, in bounded batches so it never holds long locks; dead letters are kept for their own, longer
  retention (an operator acts on them first);
- the throughput rollup counts each closed minute's completions per queue once, for the queues
  view's sparkline (which then reads rolled minutes rather than an hour of rows every refresh);
- the reaper deletes the registration rows of workers whose heartbeat stopped;
- the outbox pruner deletes published outbox rows past their retention (the audit trail).

A config, `run_once()` returning what it did, and a thin loop (STYLE.md, convention 5).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from engine.clock import Clock
from engine.drivers.base import Driver
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.runtime import logs
from engine.runtime.execute import Execution
from engine.runtime.metrics import Metrics
from engine.runtime.worker import Worker, WorkerConfig, as_registry

LEADER = "maintenance"


@dataclass(frozen=True)
class MaintenanceConfig:
    interval: float = 5.0  # seconds between passes
    leader_lease: float = 30.0
    rescue_batch: int = 500
    prune_batch: int = 1000
    prune_batches_per_pass: int = 10
    retention: float = 7 * 86400.0  # completed and cancelled rows
    dead_retention: float = 30 * 86400.0  # dead letters: longer, so an operator can act first
    worker_reap_after: float = 600.0  # a worker row whose heartbeat is older than this is gone
    # A minute's completions are rolled up this long after it ends: a completion recorded later
    # than that (a worker clock behind the leader's by more) falls in no minute of the sparkline.
    # Leases already assume clocks agree to well under lease_seconds (30 s by default). The
    # queues view counts the rows of the minutes not rolled yet: at most settle + 60 s of them.
    throughput_settle: float = 30.0
    outbox_retention: float = 7 * 86400.0  # published outbox rows: the audit trail, then pruned

    def __post_init__(self) -> None:
        for name in (
            "interval",
            "leader_lease",
            "retention",
            "dead_retention",
            "worker_reap_after",
            "throughput_settle",
            "outbox_retention",
        ):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
                raise JobsError(
                    X_INVALID_ARGUMENT,
                    cause=f"MaintenanceConfig {name}={value!r} must be > 0 seconds",
                    fix=f"MaintenanceConfig({name}=60)",
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


@dataclass(frozen=True)
class MaintenanceResult:
    leader: bool
    term: int | None = None
    rescued: tuple[str, ...] = ()
    pruned: int = 0
    reaped: tuple[str, ...] = field(default=())
    rolled: int = 0  # (queue, minute) rows of completions rolled up
    outbox_pruned: int = 0  # published outbox rows past outbox_retention


class Maintenance:
    def __init__(self, driver: Driver, clock: Clock, *, holder: str, config: MaintenanceConfig | None = None) -> None:
        self.driver, self.clock, self.holder = driver, clock, holder
        self.config = config or MaintenanceConfig()
        self.term: int | None = None

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
        pruned = 0
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
        return MaintenanceResult(True, term, tuple(j for j, _ in rescued), pruned, tuple(reaped), rolled, outbox_pruned)

    async def run(self) -> None:
        while True:
            try:
                await self.run_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a database blip: the next pass tries again
                logs.emit(
                    logs.MAINTENANCE_FAILED, logging.WARNING, holder=self.holder, error=f"{type(exc).__name__}: {exc}"
                )
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
    **options: Any,
) -> Worker:
    """A worker that also runs maintenance under the fleet's leader lease, the outbox relay
    (``relay=False`` leaves it out; ``relay_config``: a RelayConfig) and the cron scheduler for the
    tasks it serves (engine/services/scheduler.py): what `jobs worker` and `Engine.worker()`
    start. ``options`` are `WorkerConfig` fields."""
    from engine.clock import SystemClock

    clock = clock or SystemClock()
    queues = options.pop("queues", None)
    config = WorkerConfig(queues=tuple(queues or ()), **options)
    registry = as_registry(jobs)
    w = Worker(driver, registry, config=config, clock=clock, metrics=metrics, on_execution=on_execution)
    if maintenance:
        m = Maintenance(driver, clock, holder=w.id, config=maintenance_config)
        w.add_service(m.run, on_drain=m.step_down)
        w.maintenance = m
    if relay:
        from engine.services.relay import Relay

        r = Relay(driver, clock, config=relay_config, metrics=w.metrics)
        w.add_service(r.run, on_drain=r.stop)
        w.relay = r
    if scheduler:
        from engine.services.scheduler import Scheduler
        from engine.tasks import tasks_of

        tasks = tasks_of(registry)
        if tasks:
            s = Scheduler(driver, clock, tasks, holder=w.id, config=scheduler_config, metrics=w.metrics)
            w.add_service(s.run, on_drain=s.step_down)
            w.scheduler = s
    return w
