"""`python -m bench.soak`: real workers under a steady rate, sampled (bench/README.md, "Soak")."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from bench.soak.run import SoakConfig, run_soak


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__)
    p.add_argument("--seconds", type=float, default=None, help="how long the load runs (default 90)")
    p.add_argument(
        "--minutes", type=float, default=None, help="the same in minutes: --minutes 31 for the 30-minute figure"
    )
    p.add_argument("--rate", type=float, default=200.0, help="enqueues a second")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--concurrency", type=int, default=50)
    p.add_argument("--retention", type=float, default=30.0, help="the workers' --retention (seconds)")
    p.add_argument("--reindex-interval", type=float, default=60.0, help="the workers' --reindex-interval (s)")
    p.add_argument("--reindex-min-mb", type=float, default=4.0, help="the workers' --reindex-min-mb")
    p.add_argument(
        "--sample", type=float, default=None, help="seconds between samples (default: 5, 30 past 10 minutes)"
    )
    p.add_argument("--json", type=Path, default=None, help="also write the samples and the summary as JSON here")
    a = p.parse_args(argv)
    seconds = a.minutes * 60 if a.minutes is not None else (a.seconds if a.seconds is not None else 90.0)
    sample = a.sample if a.sample is not None else (5.0 if seconds <= 600 else 30.0)
    cfg = SoakConfig(
        seconds=seconds,
        rate=a.rate,
        workers=a.workers,
        concurrency=a.concurrency,
        retention=a.retention,
        reindex_interval=a.reindex_interval,
        reindex_min_mb=a.reindex_min_mb,
        sample=sample,
    )
    report = asyncio.run(run_soak(cfg))
    if a.json:
        body = {"config": vars(cfg), "samples": [vars(s) for s in report.samples], "summary": report.summary()}
        a.json.write_text(json.dumps(body, indent=2, default=str))
    print("\n".join(report.lines()), flush=True)
    return 0 if report.started >= report.enqueued else 1


if __name__ == "__main__":
    raise SystemExit(main())
