"""Batching the worker's wake-ups: `python -m bench.wakeups [--runs 3]`.

The worker wakes on each NOTIFY and claims at once; at 1,000 jobs/s each claim takes one or two
jobs. Batched, an idle worker woken by a NOTIFY waits `delay` before its claim, so the claim
takes what arrived meanwhile (the loop already claims again at once when a NOTIFY arrives during
a claim). For each delay, at 100 and 1,000 jobs/s for 5 s, one worker process (our Worker
embedded, concurrency 200, as bench.latency's): enqueue-to-start p50 and p99 (ms), and the worker
process's CPU per job (us, utime + stime from /proc). Medians over runs, the delays in turn.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

from bench import ours
from bench.cluster import BenchCluster
from bench.drain import spawn, stop
from bench.latency import Collector, offer, percentile, warm_up
from bench.suites import arun

_TICK = os.sysconf("SC_CLK_TCK")


def _cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().split(")")[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _command(dsn: str, udp: str, delay: float) -> list[str]:
    cfg = {
        "kind": "ours",
        "dsn": dsn,
        "uvloop": True,
        "udp": udp,
        "settings": {"concurrency": 200},
        "wake_delay": delay,
    }
    return [sys.executable, "-m", "bench.child", json.dumps(cfg)]


async def _run(dsn: str, delay: float, rate: float, seconds: float) -> tuple[float, float, float]:
    col = Collector()
    procs = [spawn(_command(dsn, col.path, delay))]
    enqueue, close = await ours.producer(dsn)
    try:
        await warm_up(col, procs[0][0], enqueue)
        cpu0 = _cpu(procs[0][0].pid)
        lat = await offer(col, enqueue, rate=rate, seconds=seconds)
        cpu = _cpu(procs[0][0].pid) - cpu0
        return statistics.median(lat), percentile(lat, 0.99), cpu / len(lat) * 1e6
    finally:
        await close()
        stop(procs)
        col.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.wakeups", description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--delays", default="0,0.001,0.002,0.005", help="seconds an idle worker waits after a NOTIFY")
    ap.add_argument("--seconds", type=float, default=5.0)
    args = ap.parse_args(argv)
    delays = [float(d) for d in args.delays.split(",")]
    got: dict[tuple[float, int], list[tuple[float, float, float]]] = {}
    cluster = BenchCluster()
    cluster.start()
    try:
        for run in range(args.runs):
            for rate in (100, 1000):
                for delay in delays if run % 2 == 0 else list(reversed(delays)):
                    got.setdefault((delay, rate), []).append(arun(_run(cluster.fresh(), delay, rate, args.seconds)))
    finally:
        cluster.close()
    print(f"enqueue-to-start, one worker process, {args.runs} runs, medians")
    print(f"{'delay':>8} {'rate':>6} {'p50 ms':>8} {'p99 ms':>8} {'CPU us/job':>11}")
    for (delay, rate), xs in sorted(got.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        p50, p99, cpu = (statistics.median(x[i] for x in xs) for i in range(3))
        print(f"{delay * 1000:6.1f}ms {rate:6} {p50:8.2f} {p99:8.2f} {cpu:11.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
