"""The cron scheduler (I21): one leader per fleet enqueues each task's occurrences once.

- Every scheduler process declares the tasks it knows (jobs.schedule_state) when it starts, and
  stamps them seen once a minute; the leader schedules every declared task from those rows, so a
  fleet whose processes know different tasks still has one leader and every task scheduled. A
  task no process has stamped for ten minutes was removed from the code: retired, the leader
  enqueues none of its occurrences until one declares it again (engine.schedule.RETIRED_AFTER).
- The leader holds a lease with a fencing term (jobs.leader, name 'scheduler'). Each step of a
  tick (the watermark moved, the occurrence enqueued under its key) is one fenced statement: a
  leader that stalled past its lease, or whose watermark someone moved, writes nothing.
- A follower sleeps until the leader's lease ends, so a dead leader is replaced within a lease.
- After downtime the missed occurrences follow the task's catch-up (engine/schedule.py), and a
  `jobs.schedule.skipped` event and the projection say how many were skipped.

A config, `run_once()` returning what it did, and a thin loop (STYLE.md, convention 5).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from engine.clock import Clock
from engine.drivers.base import Driver
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.ids import IdFactory
from engine.options import Options, config_or_default, seconds, seconds_rule
from engine.runtime import logs
from engine.runtime.failures import Failures
from engine.runtime.health import SchedulerHealth
from engine.runtime.metrics import Metrics
from engine.runtime.worker_config import check_leader_lease
from engine.schedule import (
    SEEN_EVERY,
    Cron,
    ScheduleRow,
    TaskDecl,
    instant_text,
    occurrence_key,
    plan_catch_up,
)
from engine.tasks import TaskDefinition

LEADER = "scheduler"


@dataclass(frozen=True)
class SchedulerConfig(Options):
    interval: float = 5.0  # the longest a tick waits for the next (an occurrence due sooner wakes it)
    leader_lease: float = 30.0
    # An occurrence at most this old when its tick comes is on time, whatever the catch-up policy;
    # None: one lease and one interval (a handover's worst case).
    grace: float | None = None

    def __post_init__(self) -> None:
        for name in ("interval", "leader_lease", "grace"):
            value = getattr(self, name)
            if name == "grace" and value is None:
                continue
            if not seconds(value):
                raise JobsError(
                    X_INVALID_ARGUMENT,
                    cause=f"SchedulerConfig {name}={value!r} must be {seconds_rule()}",
                    fix=f"SchedulerConfig({name}=30)",
                )
        check_leader_lease("SchedulerConfig", self.leader_lease, self.interval)

    @property
    def late_grace(self) -> float:
        return self.grace if self.grace is not None else self.leader_lease + self.interval


def scheduler_health(config: SchedulerConfig | None, clock: Clock) -> SchedulerHealth:
    """The probes of a scheduler run with ``config``: a tick lands at least once an interval (a
    follower's wait for the leader's lease, a leader's for the next occurrence, are shorter)."""
    return SchedulerHealth(clock, heartbeat_interval=config_or_default(SchedulerConfig, config).interval)


@dataclass(frozen=True)
class Enqueued:
    task: str
    at: datetime
    job_id: str | None  # None: a live job already held the occurrence's key


@dataclass(frozen=True)
class SchedulerResult:
    leader: bool
    term: int | None = None
    enqueued: tuple[Enqueued, ...] = ()
    skipped: dict[str, int] = field(default_factory=dict)  # task -> occurrences skipped this tick
    fenced: tuple[str, ...] = ()  # tasks whose step the fence refused
    lease_until: datetime | None = None  # a follower: when the leader's lease ends


def declaration(t: TaskDefinition) -> TaskDecl:
    return TaskDecl(
        t.name,
        t.cron.expr,
        t.cron.timezone,
        t.catch_up,
        t.max_catch_up,
        t.queue,
        t.retry.attempts,
        t.priority,
        t.input_text,
    )


class Scheduler:
    def __init__(
        self,
        driver: Driver,
        clock: Clock,
        tasks: Iterable[TaskDefinition] = (),
        *,
        holder: str | None = None,
        config: SchedulerConfig | None = None,
        metrics: Metrics | None = None,
        ids: IdFactory | None = None,
        host: str | None = None,
        pid: int | None = None,
        health: SchedulerHealth | None = None,
    ) -> None:
        self.driver, self.clock = driver, clock
        self.health = health  # what its probes read (scheduler_health), when it serves them
        self.tasks = sorted(tasks, key=lambda t: t.name)
        self.host, self.pid = host or socket.gethostname(), pid or os.getpid()  # what the leader row names
        self.holder = holder or f"{self.host}:{self.pid}:{uuid.uuid4().hex[:8]}"
        self.config = config_or_default(SchedulerConfig, config)
        self.metrics = metrics
        self.ids = ids or IdFactory(clock)
        self.term: int | None = None
        self._declared = False
        self._seen: datetime | None = None  # when this process last stamped its tasks seen
        self._crons: dict[tuple[str, str], Cron] = {}
        self.last: SchedulerResult | None = None
        # A tick that fails is said as what it is (engine/runtime/failures.py); one refused for
        # another reason than a lost connection makes its own probes (``health``) not ready.
        self.failures = Failures("scheduler", self.holder, metrics, health)

    def _cron(self, row: ScheduleRow) -> Cron:
        key = (row.cron, row.timezone)
        if key not in self._crons:
            self._crons[key] = Cron(row.cron, row.timezone)
        return self._crons[key]

    async def run_once(self) -> SchedulerResult:
        """One tick; one that lands keeps its probes ready (``health``)."""
        res = await self._tick()
        if self.health is not None:  # its database answers
            self.health.started = True
            self.health.beat()
        return res

    async def _tick(self) -> SchedulerResult:
        cfg, now = self.config, self.clock.now()
        if not self._declared:
            await self.driver.schedule_declare(tasks=[declaration(t) for t in self.tasks], now=now)
            self._declared = True
        if self.tasks and (self._seen is None or (now - self._seen).total_seconds() >= SEEN_EVERY):
            await self.driver.schedule_seen(tasks=[t.name for t in self.tasks], now=now)
            self._seen = now
        term = await self.driver.leader_acquire(
            name=LEADER, holder=self.holder, now=now, lease_seconds=cfg.leader_lease
        )
        if term is None:
            self.term = None
            lead = await self.driver.schedule_leader_get(leader=LEADER)
            if self.metrics is not None:
                age = float("inf") if lead is None or lead.ticked_at is None else (now - lead.ticked_at).total_seconds()
                self.metrics.scheduler_tick_age.set(max(0.0, age))
            self.last = SchedulerResult(False, lease_until=None if lead is None else lead.lease_until)
            return self.last
        if term != self.term:
            logs.emit(logs.LEADER_ACQUIRED, leader=LEADER, holder=self.holder, term=term)
        self.term = term
        await self.driver.schedule_leader_tick(
            leader=LEADER, holder=self.holder, term=term, host=self.host, pid=self.pid, now=now
        )
        if self.metrics is not None:
            self.metrics.scheduler_tick_age.set(0.0)
        enqueued: list[Enqueued] = []
        skipped: dict[str, int] = {}
        fenced: list[str] = []
        for row in await self.driver.schedule_list():
            if row.paused or row.retired(now):
                continue
            try:
                cron = self._cron(row)
            except Exception:  # a zone this host's zone database lacks: another process schedules it
                continue
            due, truncated = cron.due(row.since, now)
            steps = plan_catch_up(
                due,
                now=now,
                policy=row.catch_up,
                max_catch_up=row.max_catch_up,
                grace=cfg.late_grace,
                truncated=truncated,
            )
            expected = row.watermark
            for step in steps:
                job_id = self.ids.new() if step.enqueue else None
                res = await self.driver.schedule_advance(
                    task=row.task,
                    expected=expected,
                    at=step.at,
                    skipped=step.skipped,
                    job_id=job_id,
                    key=occurrence_key(row.task, step.at),
                    scheduled_for=instant_text(step.at),
                    leader=LEADER,
                    holder=self.holder,
                    term=term,
                    now=now,
                )
                if not res.moved:
                    fenced.append(row.task)
                    logs.emit(logs.SCHEDULE_FENCED, logging.WARNING, task=row.task, holder=self.holder, term=term)
                    break
                expected = step.at
                if step.skipped:
                    skipped[row.task] = skipped.get(row.task, 0) + step.skipped
                    logs.emit(
                        logs.SCHEDULE_SKIPPED,
                        logging.WARNING,
                        task=row.task,
                        count=step.skipped,
                        catch_up=row.catch_up,
                        until=instant_text(step.at),
                    )
                    if self.metrics is not None:
                        self.metrics.schedule_skipped.labels(row.task).inc(step.skipped)
                if step.enqueue:
                    enqueued.append(Enqueued(row.task, step.at, res.job_id))
                    logs.emit(
                        logs.SCHEDULE_ENQUEUED, task=row.task, scheduled_for=instant_text(step.at), job_id=res.job_id
                    )
                    if self.metrics is not None:
                        self.metrics.schedule_enqueued.labels(row.task).inc()
            if fenced and fenced[-1] == row.task and not await self._still_leading(now):
                break
        self.last = SchedulerResult(True, term, tuple(enqueued), skipped, tuple(fenced))
        return self.last

    async def _still_leading(self, now: datetime) -> bool:
        lead = await self.driver.schedule_leader_get(leader=LEADER)
        return lead is not None and lead.holder == self.holder and lead.term == self.term and lead.lease_until >= now

    def next_wait(self) -> float:
        """How long the loop sleeps after a tick: a follower until the leader's lease ends, a
        leader until the next occurrence falls due; the interval at most either way."""
        cfg, now, last = self.config, self.clock.now(), self.last
        wait = cfg.interval
        if last is not None and not last.leader and last.lease_until is not None:
            wait = min(wait, (last.lease_until - now).total_seconds() + 0.001)
        elif last is not None and last.leader:
            for t in self.tasks:
                nxt = t.cron.next_after(now)
                if nxt is not None:
                    wait = min(wait, (nxt - now).total_seconds())
        return max(0.001, wait)

    async def run(self) -> None:
        while True:
            try:
                await self.run_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the next tick tries again
                self.failures.failed(exc)
                self.last = None
                if self.health is not None:
                    self.health.beat_failed(exc)
            else:
                self.failures.landed()
            await self.clock.sleep(self.next_wait())

    async def step_down(self) -> None:
        if self.health is not None:
            self.health.stopped = True
        if self.term is not None:
            try:
                await self.driver.leader_release(name=LEADER, holder=self.holder, term=self.term, now=self.clock.now())
            except Exception:  # the lease lapses on its own
                pass
            self.term = None
