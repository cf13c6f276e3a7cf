"""One torture run: a private PostgreSQL, a fleet of `jobsctl worker` processes, a steady mix of jobs,
faults injected on a plan, then the end (no more faults, every event sent, the cron task
paused, the live jobs left to settle, the fleet drained) and the checks.

`run_torture(TortureConfig(...))` answers a `TortureReport`; `report.lines()` is what
`python -m bench.torture` prints, the checks last.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from bench.torture import checks, checks_fanins
from bench.torture.cluster import PASSWORD, TortureCluster
from bench.torture.faults import KINDS, Fault, Injector, isolated_plan, storm_plan
from bench.torture.fleet import Fleet, read_events
from bench.torture.load import MARKER, Producer
from bench.torture.monitor import Recovery, Sampler, recovery
from bench.torture.sqlq import sql
from engine.api import connect
from engine.introspect import Introspector
from engine.introspect.schedules import Schedules

START_TIMEOUT = 90.0  # the fleet registering, on a loaded machine
# The targets: the completion rate back within 10% of its rate before the fault, in under.
RECOVERY_TARGETS = {"backend": 10.0, "restart": 30.0}


@dataclass
class TortureConfig:
    seconds: float = 50.0  # how long faults are injected and jobs enqueued
    rate: float = 20.0  # enqueues a second
    jobs: int | None = None  # stop enqueueing after this many (None: rate x seconds)
    workers: int = 3
    lease: float = 3.0
    concurrency: int = 16
    skew: float = 0.3  # worker i runs at (0, +skew, -skew)[i % 3] seconds
    plan: str = "storm"  # storm | isolated | none
    kinds: tuple[str, ...] = KINDS  # the fault kinds the plan may use
    kill_every: float = 7.0
    settle: float = 60.0  # the longest the end waits for the live jobs
    seed: int = 1
    logs: Path | None = None  # where the workers' logs go (None: a temporary directory)


@dataclass
class TortureReport:
    config: TortureConfig
    checks: list[checks.Check]
    faults: list[Fault]
    recoveries: list[Recovery]
    reruns: dict[str, int]
    gone_alive: tuple[int, int]  # (workers declared gone while alive, their jobs re-delivered)
    last_settled: list[str]  # the jobs that finished last (where the end waited)
    enqueued: int
    producer_errors: int
    skews: tuple[float, ...]
    plain_lines: list[str]
    worker_exits: list[tuple[int, int | None, float | None]]  # (pid, exit code, seconds to exit) at the drain
    unexpected_exits: list[tuple[int, int | None]]
    elapsed: float
    settle_seconds: float
    logs: Path
    extra: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(self.config).items()},
            "ok": self.ok,
            "checks": [
                {"name": c.name, "ok": c.ok, "detail": c.detail, "problems": list(c.problems)} for c in self.checks
            ],
            "faults": [{"kind": f.kind, "at": f.at, "seconds": f.until - f.at, **f.detail} for f in self.faults],
            "fault_counts": self.fault_counts(),
            "recoveries": [vars(r) for r in self.recoveries],
            "timeline": self.extra.get("timeline", []),
            "reruns": self.reruns,
            "gone_alive": list(self.gone_alive),
            "enqueued": self.enqueued,
            "producer_errors": self.producer_errors,
            "skews": list(self.skews),
            "plain_lines": self.plain_lines,
            "worker_exits": self.worker_exits,
            "unexpected_exits": self.unexpected_exits,
            "elapsed": self.elapsed,
            "settle_seconds": self.settle_seconds,
        }

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def fault_counts(self) -> dict[str, int]:
        out = {kind: 0 for kind in KINDS}
        for f in self.faults:
            out[f.kind] += 1
        return out

    def lines(self) -> list[str]:
        cfg = self.config
        out = [
            f"torture: {cfg.seconds:g} s of faults, {cfg.workers} workers (concurrency {cfg.concurrency}, lease "
            f"{cfg.lease:g} s), {self.enqueued} enqueues at {cfg.rate:g}/s, plan {cfg.plan}; settled "
            f"{self.settle_seconds:.1f} s later; {self.elapsed:.0f} s in all; logs in {self.logs}",
            f"producer calls retried: {self.producer_errors}",
            "last to settle: " + "; ".join(self.last_settled),
        ]
        if self.plain_lines:
            out.append(f"log lines that are not JSON events: {len(self.plain_lines)}")
            out += [f"  {line}" for line in self.plain_lines[:10]]
        out.append(
            "recovery (rate = completions/s; ratio: after/before over 30 s; dip: the lowest 1-s rate after / before;"
            " seconds until a 1-s rate is back within 10%):"
        )
        for r in self.recoveries:
            ratio = f"{r.ratio:.2f}" if r.ratio is not None else "-"
            dip = f"{r.dip:.2f}" if r.dip is not None else "-"
            back = f"{r.recovered:.2f} s" if r.recovered is not None else "not within the window"
            note = "" if r.full_window else " (windows cut by the run's edges)"
            out.append(
                f"  {r.kind:8} at {r.at:6.1f} s: before {r.before:6.1f}/s after {r.after:6.1f}/s ratio {ratio:>5}"
                f" dip {dip:>5} back in {back}{note}"
            )
        for kind, bound in RECOVERY_TARGETS.items():
            got = [r.recovered for r in self.recoveries if r.kind == kind]
            if not got:
                continue
            worst = None if any(g is None for g in got) else max(g for g in got if g is not None)
            verdict = "met " if worst is not None and worst < bound else "MISS"
            shown = f"{worst:.2f} s" if worst is not None else "not within the window"
            out.append(f"  [{verdict}] back within 10% after a {kind} in under {bound:g} s: the slowest {shown}")
        exits = ", ".join(
            f"{code}" + (f" in {secs:.1f} s" if secs is not None else "") for _, code, secs in self.worker_exits
        )
        out.append(
            f"drain at the end: exit codes {exits}; exits on their own during the run: {len(self.unexpected_exits)}"
        )
        out.append(
            f"workers declared gone while alive (a killed presence session): {self.gone_alive[0]}, their jobs "
            f"re-delivered: {self.gone_alive[1]}"
        )
        reruns = ", ".join(f"{k} {v}" for k, v in sorted(self.reruns.items()))
        out.append(f"handler re-runs (at-least-once, expected): {reruns}")
        counts = self.fault_counts()
        skew = ", ".join(f"{s:+g} s" for s in self.skews)
        out.append("faults injected: " + ", ".join(f"{k} {n}" for k, n in counts.items()) + f", clock skew ({skew})")
        for c in self.checks:
            out.append(c.line())
            out += [f"       {p}" for p in c.problems[:8]]
            if len(c.problems) > 8:
                out.append(f"       (+{len(c.problems) - 8} more)")
        return out


def _skews(cfg: TortureConfig) -> tuple[float, ...]:
    pattern = (0.0, cfg.skew, -cfg.skew)
    return tuple(pattern[i % 3] for i in range(cfg.workers))


def _plan(cfg: TortureConfig) -> list[tuple[float, str]]:
    if cfg.plan == "none":
        return []
    plan = storm_plan(cfg.seconds, cfg.kill_every) if cfg.plan == "storm" else isolated_plan(cfg.seconds)
    return [(t, k) for t, k in plan if k in cfg.kinds]


async def _rows(dsn: str, name: str) -> list[dict[str, Any]]:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True, row_factory=dict_row) as conn:
        return await (await conn.execute(sql(name))).fetchall()  # type: ignore[arg-type]


async def _until(what: str, check: Any, timeout: float, every: float = 0.25, *, give_up: bool = False) -> float:
    """Seconds until ``check()`` answers true; past ``timeout``, TimeoutError (or, with
    ``give_up``, the time waited: the checks then say what did not happen)."""
    started = time.monotonic()
    while True:
        try:
            if await check():
                return time.monotonic() - started
        except psycopg.Error:
            pass
        if time.monotonic() - started > timeout:
            if give_up:
                return time.monotonic() - started
            raise TimeoutError(f"{what}: not within {timeout:g} s")
        await asyncio.sleep(every)


async def run_torture(cfg: TortureConfig) -> TortureReport:
    began = time.monotonic()
    # The harness's own pool warns as the faults end its connections: expected, and not the
    # workers' logs under test. Set back at the end: a test runs this in its own process.
    pool_log = logging.getLogger("psycopg.pool")
    pool_level = pool_log.level
    pool_log.setLevel(logging.ERROR)
    logs = cfg.logs or Path(tempfile.mkdtemp(prefix="torture-logs-"))
    cluster = TortureCluster()
    await asyncio.to_thread(cluster.start)
    skews = _skews(cfg)
    fleet = Fleet(cluster.app, logs, size=cfg.workers, lease=cfg.lease, concurrency=cfg.concurrency, skews=skews)
    eng = connect(cluster.admin)
    tasks: list[asyncio.Task[Any]] = []
    try:
        fleet.start()
        await _until(
            "every worker registered",
            lambda: _registered(cluster.admin, cfg.workers),
            START_TIMEOUT,
        )
        sampler = Sampler(cluster.admin)
        total = cfg.jobs if cfg.jobs is not None else int(cfg.rate * cfg.seconds)
        producer = Producer(eng, cluster.app, cfg.rate, total=total, seed=cfg.seed)
        injector = Injector(cluster, fleet, lease=cfg.lease, seed=cfg.seed)
        start = time.monotonic()
        tasks = [
            asyncio.ensure_future(sampler.run()),
            asyncio.ensure_future(_supervise(fleet)),
        ]
        load = asyncio.ensure_future(producer.run())
        faults = asyncio.ensure_future(injector.run(_plan(cfg), start))
        await asyncio.sleep(max(0.0, start + cfg.seconds - time.monotonic()))
        producer.stop()
        await load
        load_end = time.monotonic()
        await faults
        # The end: nothing more is injected; the last events go out, the cron task stops, and the
        # live jobs are given their time.
        await producer.send_all()
        await _pause_cron(eng)
        settle = await _until("every live job settled", lambda: _settled(cluster.admin), cfg.settle, give_up=True)
        await asyncio.sleep(1.0)  # the sampler's last points after the last completion
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.to_thread(fleet.drain)
        evidence = await _gather(cluster, eng, producer, injector, fleet)
        faults_seen = sorted(injector.faults, key=lambda f: f.at)
        report = TortureReport(
            config=cfg,
            checks=_checks(evidence, cfg, injector, fleet),
            faults=faults_seen,
            recoveries=[recovery(sampler, f.kind, f.at, start, load_end) for f in faults_seen],
            reruns=checks.reruns(evidence),
            gone_alive=checks.gone_while_alive(evidence),
            last_settled=checks.last_settled(evidence),
            enqueued=len(producer.sent),
            producer_errors=producer.errors,
            skews=skews,
            plain_lines=checks.plain_lines(evidence),
            worker_exits=[(i.pid, i.exit_code, i.exit_seconds) for i in fleet.incarnations if i.drained],
            unexpected_exits=[(i.pid, i.exit_code) for i in fleet.unexpected_exits],
            elapsed=time.monotonic() - began,
            settle_seconds=settle,
            logs=logs,
            extra={"timeline": [(round(t - start, 2), c) for t, c in zip(sampler.times, sampler.counts)]},
        )
        return report
    finally:
        for t in tasks:
            t.cancel()
        fleet.kill_all()
        await eng.aclose()
        await asyncio.to_thread(cluster.close)
        pool_log.setLevel(pool_level)


def elapsed_minutes(producer: Producer) -> float:
    first = min((s.at for s in producer.sent.values()), default=time.monotonic())
    return (time.monotonic() - first) / 60


async def _registered(dsn: str, n: int) -> bool:
    return len(await _rows(dsn, "torture_workers")) >= n


async def _settled(dsn: str) -> bool:
    rows = await _rows(dsn, "torture_live")
    return int(rows[0]["n"]) == 0


async def _supervise(fleet: Fleet) -> None:
    while True:
        fleet.reap()
        await asyncio.sleep(0.5)


async def _pause_cron(eng: Any) -> None:
    while True:
        try:
            await Schedules(eng, actor="torture").pause("torture.tick", note="the torture run ends")
            return
        except Exception:
            await asyncio.sleep(0.2)


async def _gather(cluster: TortureCluster, eng: Any, producer: Producer, injector: Injector, fleet: Fleet) -> Any:
    dsn = cluster.admin
    view = (await Introspector(eng).queues()).queues
    q = next((v for v in view if v.name == "torture"), None)
    dead = await Introspector(eng).dead_letters()
    projected: dict[str, Any] = {"dead_letters": (dead.total.value, dead.total.exact)}
    if q is not None:
        for state in ("ready", "delayed", "running", "suspended", "parked", "dead", "completed_last_hour"):
            c = getattr(q, state)
            projected[state] = (c.value, c.exact)
        # The sparkline's minutes (rolled up by the leader, the rest counted): never capped.
        projected["throughput"] = (sum(q.throughput), elapsed_minutes(producer) < 55)
    logs = {inc.log.name: inc.log.read_text(errors="replace") for inc in fleet.incarnations if inc.log.exists()}
    stalled = {s["log"]: read_events(Path(s["log"])) for s in injector.stalls}
    return checks.Evidence(
        jobs=await _rows(dsn, "torture_jobs"),
        executions=await _rows(dsn, "torture_executions"),
        steps=await _rows(dsn, "torture_steps"),
        attempts=await _rows(dsn, "torture_attempts"),
        outbox=await _rows(dsn, "torture_outbox"),
        orders={r["key"] for r in await _rows(dsn, "torture_orders")},
        schedule=await _rows(dsn, "torture_schedule"),
        direct_counts={r["state"]: int(r["n"]) for r in await _rows(dsn, "torture_state_counts")},
        projected=projected,
        sent=producer.sent,
        now=datetime.now(UTC),
        logs=logs,
        stalls=injector.stalls,
        stalled_events=stalled,
        operator_changes=await _rows(dsn, "torture_operator_changes"),
        audit=await _rows(dsn, "torture_audit"),
    )


def _checks(ev: checks.Evidence, cfg: TortureConfig, injector: Injector, fleet: Fleet) -> list[checks.Check]:
    out = [
        checks.settled(ev),
        checks.rolled_back(ev),
        checks.one_completion(ev),
        checks.steps_once(ev),
        checks_fanins.fan_ins(ev),
        checks_fanins.cascades(ev),
        checks_fanins.revivals(ev),
        checks_fanins.audited(ev),
        checks.cron_once(ev),
        checks.projections(ev),
    ]
    if ev.stalls:
        out.append(checks.stalled_worker(ev))
    exits = [f"pid {i.pid} exited {i.exit_code}" for i in fleet.unexpected_exits]
    for f in injector.faults:
        if f.kind == "term" and f.detail.get("exit") != 0:
            exits.append(
                f"pid {f.detail['pid']} SIGTERMed: exit {f.detail.get('exit')} "
                f"(None: still running {fleet.drain_bound:g} s + slack later, killed)"
            )
    drained = [i for i in fleet.incarnations if i.drained]
    bad = [f"pid {i.pid} drained with exit {i.exit_code}" for i in drained if i.exit_code != 0]
    terms = [f for f in injector.faults if f.kind == "term"]
    slowest = max((f.detail.get("seconds_to_exit") or 0.0 for f in terms), default=0.0)
    out.append(
        checks.Check(
            "every worker recovered on its own and drained cleanly",
            not exits and not bad,
            f"{len(fleet.unexpected_exits)} exits on their own; {len(terms)} SIGTERMed mid-run, the slowest out in "
            f"{slowest:.1f} s; {len(drained)} drained at the end, exit codes {sorted({i.exit_code for i in drained}, key=str)}",
            tuple(exits + bad),
        )
    )
    out.append(checks.secrets(ev, PASSWORD, MARKER))
    return out
