"""`python -m bench.torture`: a torture run of any size; exits 1 when a check fails."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from bench.torture.faults import KINDS
from bench.torture.run import TortureConfig, run_torture


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.torture", description=__doc__)
    p.add_argument("--seconds", type=float, default=120.0, help="how long jobs are enqueued and faults injected")
    p.add_argument("--jobs", type=int, default=None, help="jobs to enqueue (default: rate x seconds)")
    p.add_argument("--rate", type=float, default=None, help="enqueues a second (default: jobs / seconds, else 20)")
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--lease", type=float, default=3.0, help="the workers' --lease-seconds")
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--skew", type=float, default=0.3, help="worker clocks at 0, +skew, -skew seconds")
    p.add_argument(
        "--plan",
        choices=("storm", "isolated", "none"),
        default="storm",
        help="storm: faults overlap, as the CI run; isolated: one at a time with 30 s windows (the recovery figures)",
    )
    p.add_argument("--faults", default=",".join(KINDS), help=f"the kinds to inject, of {','.join(KINDS)}")
    p.add_argument("--settle", type=float, default=120.0, help="the longest the end waits for the live jobs")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--logs", type=Path, default=None, help="keep the workers' logs here")
    p.add_argument("--json", type=Path, default=None, help="also write the report as JSON here")
    a = p.parse_args(argv)
    rate = a.rate or (a.jobs / a.seconds if a.jobs else 20.0)
    kinds = tuple(k for k in a.faults.split(",") if k)
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        p.error(f"--faults names {', '.join(unknown)}; the kinds are {', '.join(KINDS)}")
    cfg = TortureConfig(
        seconds=a.seconds,
        rate=rate,
        jobs=a.jobs,
        workers=a.workers,
        lease=a.lease,
        concurrency=a.concurrency,
        skew=a.skew,
        plan=a.plan,
        kinds=kinds,
        settle=a.settle,
        seed=a.seed,
        logs=a.logs,
    )
    report = asyncio.run(run_torture(cfg))
    if a.json:
        a.json.write_text(json.dumps(report.as_json(), indent=2, default=str))
    print("\n".join(report.lines()), flush=True)
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
