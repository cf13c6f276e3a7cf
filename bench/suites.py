"""The measured suites. Each takes the cluster, the plan and the results, and adds one sample
per run to every figure it owns; systems are interleaved within a run to spread the noise."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import sys
from collections.abc import Callable, Coroutine
from functools import partial
from typing import Any

from bench import costs as cost_suite
from bench import ours, peer, raw
from bench.cluster import BenchCluster
from bench.drain import machine_busy, timed_drain
from bench.latency import steady
from bench.limit import pgbench
from bench.plan import Plan
from bench.stats import Figure, Results

Suite = Callable[[BenchCluster, Plan, Results], None]
ENQUEUE_RUNS = 5


def arun(coro: Coroutine[Any, Any, Any]) -> Any:
    """The parent's loop is uvloop, as pgqueuer's CLI uses: the same loop for every system."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)


def enqueue(c: BenchCluster, plan: Plan, res: Results) -> None:
    # Each figure takes seconds, and the shared machine's stalls come in bursts of about as long:
    # the two systems run back to back per figure, in alternating order, 5 runs at least.
    runs = plan.runs if plan.quick else max(plan.runs, ENQUEUE_RUNS)
    for run in range(runs):
        systems = (("ours", ours), ("peer", peer)) if run % 2 == 0 else (("peer", peer), ("ours", ours))
        for system, mod in systems:
            res.add("enqueue.single", system, arun(mod.enqueue_single(c.fresh(), plan.enqueue_single)))
        for size in (100, 1000):
            for system, mod in systems:
                res.add(f"enqueue.batch{size}", system, arun(mod.enqueue_batch(c.fresh(), plan.enqueue_batched, size)))
        res.add(
            "enqueue.single",
            "raw",
            pgbench(c.fresh(), "pgb_insert", batch=1, clients=1, transactions=plan.enqueue_single),
            note="pgbench, 1 client",
        )
        for size in (100, 1000):
            txns = max(5, plan.enqueue_batched // size)
            res.add(
                f"enqueue.batch{size}",
                "raw",
                pgbench(c.fresh(), "pgb_insert", batch=size, clients=1, transactions=txns),
                note="pgbench, 1 client",
            )


def limit(c: BenchCluster, plan: Plan, res: Results) -> None:
    """The raw life cycle (insert, claim SKIP LOCKED, fenced ack) at 1 and 4 clients."""
    for _ in range(plan.runs):
        for batch, clients in ((1, 1), (100, 1), (100, 4)):
            txns = plan.lifecycle_txns * (10 if batch == 1 else 1)
            key = f"lifecycle.{'single' if batch == 1 else f'batch{batch}'}.c{clients}"
            res.add(
                key,
                "raw",
                pgbench(c.fresh(), "pgb_lifecycle", batch=batch, clients=clients, transactions=txns),
                note=f"pgbench, {clients} client(s)",
            )


def _ours_drain(
    c: BenchCluster, plan: Plan, procs: int, settings: dict[str, Any], job: Any = None, total: int | None = None
) -> Callable[[], float]:
    """A fresh database seeded with the drain's jobs, and the timed drain of it."""
    dsn = c.fresh()
    n = total or plan.drain
    arun(ours.seed(dsn, n, job=job))
    cmds = [ours.worker_command(dsn, **settings) for _ in range(procs)]
    return partial(timed_drain, dsn, cmds, ours.REMAINING, ours.PARAMS, n)


def _timed(
    res: Results, key: str, system: str, jobs: int, run: Callable[[], float], *, note: str, label: str = ""
) -> None:
    """One drain's rate as ``key``, and beside it what the machine's cores spent a job on it
    (``key``.cpu, us a job: client and server, starts included); a swept setting's ``label``
    goes after an @ in both keys (cli.py's best_of keeps the best setting's pair)."""
    at = f"@{label}" if label else ""
    busy = machine_busy()
    rate = run()
    after = machine_busy()
    res.add(key + at, system, rate, note=note)
    if busy is not None and after is not None:
        cpu = (after - busy) / jobs * 1e6
        res.add(f"{key}.cpu{at}", system, cpu, unit="us/job", higher_is_better=False, note=note)


def drain(c: BenchCluster, plan: Plan, res: Results) -> None:
    # Per process count, each system in turn, the order reversed every other run (as enqueue's).
    for run in range(plan.runs):
        for procs in (1, 2):
            turns = (_drain_peer, _drain_raw, _drain_sql, _drain_ours_sweep)
            for turn in turns if run % 2 == 0 else reversed(turns):
                turn(c, plan, res, procs)


def _drain_peer(c: BenchCluster, plan: Plan, res: Results, procs: int) -> None:
    dsn = c.fresh()
    arun(peer.seed(dsn, plan.drain))
    cmds = [peer.worker_command(dsn) for _ in range(procs)]
    run = partial(timed_drain, dsn, cmds, peer.REMAINING, {}, plan.drain)
    _timed(res, f"drain.p{procs}", "peer", plan.drain, run, note=f"batch_size={peer.BATCH}, uvloop")


def _drain_raw(c: BenchCluster, plan: Plan, res: Results, procs: int) -> None:
    dsn = c.fresh()
    raw.seed(dsn, plan.drain)
    cmds = [raw.worker_command("loop", dsn) for _ in range(procs)]
    run = partial(timed_drain, dsn, cmds, raw.REMAINING, {}, plan.drain)
    _timed(res, f"drain.p{procs}", "raw", plan.drain, run, note=f"bare psycopg loop, claim {raw.BATCH}")


def _drain_sql(c: BenchCluster, plan: Plan, res: Results, procs: int) -> None:
    dsn = c.fresh()
    arun(ours.seed(dsn, plan.drain))
    cmds = [raw.worker_command("loopq", dsn) for _ in range(procs)]
    run = partial(timed_drain, dsn, cmds, ours.REMAINING, ours.PARAMS, plan.drain)
    _timed(res, f"drain.p{procs}", "sql", plan.drain, run, note=f"bare loop over our SQL, claim {raw.BATCH}")


def _drain_ours_sweep(c: BenchCluster, plan: Plan, res: Results, procs: int) -> None:
    if not ours.worker_available():
        return
    for label, settings in ours.DRAIN_SETTINGS.items():
        if plan.quick and label != "cli c200":
            continue
        try:
            run = _ours_drain(c, plan, procs, settings)
            _timed(res, f"drain.p{procs}", "ours", plan.drain, run, note=label, label=label)
        except Exception as exc:
            _failed(res, f"drain ours {label} x{procs}", exc)


def _failed(res: Results, what: str, exc: Exception) -> None:
    """One failed run is recorded and reported, and the invocation goes on (its figure has one
    sample fewer; a figure with none is missing from the table, and the quick test says so)."""
    res.errors.append(f"{what}: {type(exc).__name__}: {str(exc).strip()[:300]}")
    print(f"# FAILED {what}: {exc!r}"[:400], file=sys.stderr, flush=True)


def latency(c: BenchCluster, plan: Plan, res: Results) -> None:
    for _ in range(plan.runs):
        for rate in plan.rates:
            runs: list[tuple[str, Callable[[str, str], list[str]], Any, Any]] = [
                ("peer", lambda dsn, udp: peer.worker_command(dsn, udp=udp), peer.producer, None)
            ]
            if ours.worker_available():
                runs.append(
                    (
                        "ours",
                        lambda dsn, udp: ours.worker_command(dsn, concurrency=200),
                        ours.producer,
                        lambda udp: {"BENCH_UDP": udp},
                    )
                )
            for system, command, producer, env in runs:
                try:
                    p50, p99 = arun(
                        steady(c.fresh(), command, producer, rate=rate, seconds=plan.latency_seconds, env=env)
                    )
                except Exception as exc:
                    _failed(res, f"latency {system} at {rate}/s", exc)
                    continue
                res.add(f"latency.r{rate}.p50", system, p50, unit="ms", higher_is_better=False)
                res.add(f"latency.r{rate}.p99", system, p99, unit="ms", higher_is_better=False)


def steps(c: BenchCluster, plan: Plan, res: Results) -> None:
    if not ours.steps_available():
        return
    for _ in range(plan.runs):
        settings = ours.DRAIN_SETTINGS["cli c200"]
        rate = _ours_drain(c, plan, 1, settings, job=ours.workload.steps5, total=plan.steps_jobs)()
        res.add("steps5.jobs", "ours", rate, note="1 process, cli c200, sync step bodies (a thread each)")
        res.add("steps5.steps", "ours", rate * 5, unit="steps/s")
        rate = _ours_drain(c, plan, 1, settings, job=ours.workload.steps5async, total=plan.steps_jobs)()
        res.add("steps5async.jobs", "ours", rate, note="1 process, cli c200, async step bodies")
        res.add("steps5async.steps", "ours", rate * 5, unit="steps/s")


def console(c: BenchCluster, plan: Plan, res: Results) -> None:
    """The introspection engineer's projection timings (bench/projections.py), when present."""
    try:
        projections = importlib.import_module("bench.projections")
    except ImportError:
        return
    run = getattr(projections, "run", None)
    if run is None:
        return
    offered = {
        "dsn": c.fresh(),
        "jobs": plan.console_jobs,
        "runs": plan.runs,
        "quick": plan.quick,
        "cluster": c,
        "admin": c.admin,
    }
    names = inspect.signature(run).parameters
    out = run(**{k: v for k, v in offered.items() if k in names})
    for key, value in out.items() if isinstance(out, dict) else []:
        samples = value if isinstance(value, list) else [value]
        for v in samples:
            res.add(f"console.{key}", "ours", float(v), unit="ms", higher_is_better=False)
    for fig in out if isinstance(out, list) else []:
        if isinstance(fig, Figure):
            res.put(fig)


def costs(c: BenchCluster, plan: Plan, res: Results) -> None:
    """Statements, commits and WAL bytes per job, ours and pgqueuer's (bench/costs.py)."""
    cost_suite.suite(c, plan, res, arun)


SUITES: dict[str, Suite] = {
    "enqueue": enqueue,
    "limit": limit,
    "drain": drain,
    "latency": latency,
    "steps": steps,
    "console": console,
    "costs": costs,
}
