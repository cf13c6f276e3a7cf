"""What tracing costs: `python -m bench.tracing [--rounds 5] [--only single,batch100,drain]`.

The same figures as `python -m bench.ab` (bench/ab_child.py: enqueues through the public API, a
drain by a Worker embedded in the process), on this tree, with tracing off and on, alternating in
one invocation, each measurement a fresh process on a fresh database. "on" is
`connect(dsn, tracing=...)` and the worker's `tracing=`, into OpenTelemetry's SDK with a
BatchSpanProcessor whose exporter drops the spans: the spans are made, their contexts stored with
the jobs and read back by the claim, and none leaves the process. Prints each side's median
jobs/s [min-max] and client CPU a job, and on/off.
"""

from __future__ import annotations

import argparse

from bench.ab import FIGURES, HERE, Results, alternate, report


def run(rounds: int, figures: list[str]) -> Results:
    sides = [("base", HERE, {"BENCH_TRACING": "0"}), ("new", HERE, {"BENCH_TRACING": "1"})]
    return alternate(sides, rounds, figures)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.tracing", description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default="single,batch100,drain", help=f"some of {', '.join(FIGURES)}")
    args = ap.parse_args(argv)
    figures = [f for f in args.only.split(",") if f]
    unknown = [f for f in figures if f not in FIGURES]
    if unknown or args.rounds < 1:
        ap.error(f"--only takes {', '.join(FIGURES)} (got {', '.join(unknown) or 'none'}); --rounds >= 1")
    results = run(args.rounds, figures)
    print(f"python -m bench.tracing --rounds {args.rounds}: medians of {args.rounds}, jobs/s, tracing off then on")
    print(report("", results, new="tracing on", old="tracing off"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
