"""The scheduler on real Postgres under contention: three schedulers (each its own pool) racing
over one fake clock for a simulated day, and a real `jobsctl scheduler` process SIGKILLed while it
leads. Waits are on the processes' own log lines and on the schedulers' results, never sleeps."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engine.clock import FakeClock, SystemClock
from engine.drivers.postgres import PostgresDriver
from engine.projections import JobFilter
from engine.services.scheduler import Scheduler, SchedulerConfig, SchedulerResult
from engine.tasks import task
from tests.engine import test_scheduler_app as app

ROOT = Path(__file__).resolve().parents[2]


async def _noop(ctx, inp):  # type: ignore[no-untyped-def]
    return None


EVERY5 = task(name="race.every5", cron="*/5 * * * *", queue="race")(_noop)
HOURLY = task(name="race.hourly", cron="0 * * * *", timezone="Europe/Paris", queue="race", catch_up="all")(_noop)


async def _keys(d: PostgresDriver, name: str) -> list[str]:
    out, cursor = [], None
    while True:
        page = await d.job_page(where=JobFilter(name=name), limit=500, cursor=cursor, count_cap=10_000, budget_ms=None)
        out += [j.idempotency_key for j in page.items]
        if page.next_cursor is None:
            return sorted(out)
        cursor = page.next_cursor


@pytest.mark.timeout(180)  # ~1,200 rounds of three schedulers on a shared machine
async def test_i21_three_schedulers_racing_for_a_simulated_day_enqueue_each_occurrence_once(pg_dsn: str) -> None:
    clock = FakeClock(datetime(2026, 3, 28, 12, tzinfo=UTC))  # the day Europe/Paris springs forward
    cfg = SchedulerConfig(interval=10.0, leader_lease=60.0, grace=600.0)
    drivers = [PostgresDriver(pg_dsn, pool_size=3) for _ in range(3)]
    scheds = [Scheduler(d, clock, [EVERY5, HOURLY], holder=f"s{i}", config=cfg) for i, d in enumerate(drivers)]
    worker = drivers[0]
    results: list[SchedulerResult] = []
    try:
        end = clock.now() + timedelta(days=1)
        n = 0
        stalled: Scheduler | None = None
        rounds: list[list[SchedulerResult]] = []
        while clock.now() < end:
            # After a lapse the last leader stalls for a round, so the other two race for its
            # lease; it comes back the round after with its old term, a follower.
            racing = [s for s in scheds if s is not stalled]
            round_ = await asyncio.gather(*(s.run_once() for s in racing))
            results += round_
            rounds.append(round_)
            lapsing = n % 2 == 1  # the next advance is past the lease
            stalled = next((s for s, r in zip(racing, round_) if r.leader), None) if lapsing else None
            # Complete what was enqueued, so the live dedupe index cannot be what stops a repeat:
            # only the watermark can.
            claimed = (
                await worker.worker_claim(queues=["race"], limit=50, worker="w", now=clock.now(), lease_seconds=60)
            ).jobs
            if claimed:
                from engine.types import Ack, Claim

                acks = [Ack(Claim(c.row.id, "w", c.row.run), None) for c in claimed]
                await worker.job_ack_many(acks=acks, now=clock.now())
            n += 1
            clock.advance(40 if n % 2 else 100)  # alternately within the lease and past it
        results += await asyncio.gather(*(s.run_once() for s in scheds))  # the day's last occurrence
        every5 = await _keys(worker, "race.every5")
        hourly = await _keys(worker, "race.hourly")
    finally:
        for d in drivers:
            await d.close()
    assert len(every5) == len(set(every5)) == 288
    start = datetime(2026, 3, 28, 12, tzinfo=UTC)
    assert every5 == sorted(
        f"race.every5@{(start + timedelta(minutes=5 * k)):%Y-%m-%dT%H:%M:%SZ}" for k in range(1, 289)
    )
    assert len(hourly) == len(set(hourly)) == 24  # every elapsed hour, the spring-forward one too
    leaders = {r.term for r in results if r.leader}
    assert len(leaders) > 500  # a handover at every lapse: ~600 in the day
    assert all(e.job_id is not None for r in results for e in r.enqueued)  # never a replayed occurrence
    assert not any(r.skipped for r in results)
    assert all(sum(r.leader for r in rd) == 1 for rd in rounds)  # one leader per round, never two


def _spawn(dsn: str, log: Path) -> subprocess.Popen[str]:
    cmd = [
        sys.executable,
        "-c",
        "from engine.cli import main; main()",
        "scheduler",
        "tests.engine.test_scheduler_app",
        "--dsn",
        dsn,
        "--interval",
        "0.2",
        "--lease-seconds",
        "2",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.PIPE, text=True)


async def _events(proc: subprocess.Popen[str], event: str, n: int) -> None:
    assert proc.stderr is not None
    seen = 0
    while seen < n:
        line = await asyncio.wait_for(asyncio.to_thread(proc.stderr.readline), 30)
        if not line:
            raise AssertionError(f"the scheduler exited before logging {event} {n} times")
        if line.startswith("{") and json.loads(line).get("event") == event:
            seen += 1


class Watched(Scheduler):
    """A scheduler that says when it first leads and when it has enqueued ``want`` occurrences."""

    def __init__(self, *a: object, want: int, **kw: object) -> None:
        super().__init__(*a, **kw)  # type: ignore[arg-type]
        self.took_over: float | None = None
        self.results: list[SchedulerResult] = []
        self.enough = asyncio.Event()
        self.want = want

    async def run_once(self) -> SchedulerResult:
        res = await super().run_once()
        self.results.append(res)
        if res.leader and self.took_over is None:
            self.took_over = time.time()
        if sum(len(r.enqueued) for r in self.results) >= self.want:
            self.enough.set()
        return res


async def test_i21_a_sigkilled_leader_process_is_replaced_within_one_lease_without_a_repeat_or_a_gap(
    pg_dsn: str, tmp_path: Path
) -> None:
    lease = 2.0
    proc = _spawn(pg_dsn, tmp_path / "scheduler.log")
    d = PostgresDriver(pg_dsn)
    try:
        await _events(proc, "jobs.leader.acquired", 1)
        await _events(proc, "jobs.schedule.enqueued", 3)
        proc.send_signal(signal.SIGKILL)
        await asyncio.to_thread(proc.wait, 10)
        dead = await d.schedule_leader_get(leader="scheduler")
        assert dead is not None and dead.pid == proc.pid
        survivor = Watched(
            d,
            SystemClock(),
            [app.every_second],
            holder="survivor",
            config=SchedulerConfig(interval=0.2, leader_lease=lease),
            want=3,
        )
        loop = asyncio.get_running_loop().create_task(survivor.run())
        await asyncio.wait_for(survivor.enough.wait(), 30)
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
        await survivor.step_down()
        assert survivor.took_over is not None
        # Replaced within one lease of the dead leader's last renewal (its lease end), with a
        # second's slack for this shared machine.
        assert survivor.took_over - dead.lease_until.timestamp() <= 1.0
        assert survivor.took_over >= dead.lease_until.timestamp()  # never while it still held it
        keys = await _keys(d, "k.every_second")
        instants = [datetime.strptime(k.split("@")[1], "%Y-%m-%dT%H:%M:%SZ") for k in keys]
        assert len(instants) >= 6 and len(set(instants)) == len(instants)
        gaps = [(b - a).total_seconds() for a, b in zip(instants, instants[1:])]
        assert set(gaps) == {1.0}, gaps  # every second from the first to the last, once each
        assert all(e.job_id is not None for r in survivor.results for e in r.enqueued)  # no replay
        [row] = await d.schedule_list()
        assert row.skipped == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        await d.close()
