"""Old against new, for the engine's enqueue and drain: `python -m bench.ab --base REV [--rounds 5]`.

The shared machine's speed drifts by 2x within minutes, so a change is judged by alternating the
two trees in one invocation, not by two runs of `python -m bench`. REV is checked out in a
temporary git worktree. Each measurement is a fresh process whose `engine` and `bench` are those
of its tree, on a fresh database its tree's schema.sql installed, on one throwaway cluster; the
two trees take turns, the first one alternating from round to round. Prints, per figure, each
tree's median jobs/s [min-max] and client CPU per job, and new/base.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from engine.testing import create_database, drop_database

HERE = Path(__file__).resolve().parents[1]
CHILD = Path(__file__).resolve().with_name("ab_child.py")
FIGURES = {"single": 3_000, "batch100": 20_000, "batch1000": 20_000, "drain": 20_000}


def _measure(tree: Path, dsn: str, figure: str, n: int, env: dict[str, str] | None = None) -> tuple[float, float]:
    out = subprocess.run(
        [sys.executable, str(CHILD), str(tree), dsn, figure, str(n)],
        capture_output=True,
        text=True,
        cwd=tree,
        check=False,
        env=None if env is None else {**os.environ, **env},
    )
    if out.returncode != 0:
        raise RuntimeError(f"{figure} in {tree} failed:\n{out.stderr[-2000:]}")
    got = json.loads(out.stdout.strip().splitlines()[-1])
    if not Path(got["engine"]).resolve().is_relative_to(tree.resolve()):  # the installed one, not the tree's
        raise RuntimeError(f"the measurement of {tree} imported {got['engine']}")
    return float(got["rate"]), float(got["cpu_us"])


Results = dict[str, dict[str, list[tuple[float, float]]]]


def alternate(sides: list[tuple[str, Path, dict[str, str] | None]], rounds: int, figures: list[str]) -> Results:
    """Each figure on each side (a name, its tree, its environment), taking turns, the first side
    alternating from round to round, each a fresh process on a fresh database of one cluster."""
    from bench.cluster import BenchCluster

    results: Results = {f: {name: [] for name, _, _ in sides} for f in figures}
    numbers = itertools.count(1)
    cluster = BenchCluster()
    try:
        cluster.start()
        for r in range(rounds):
            for figure in figures:
                for name, tree, env in sides if r % 2 == 0 else sides[::-1]:
                    db = f"ab_{next(numbers)}"
                    dsn = create_database(cluster.admin, db)
                    try:
                        results[figure][name].append(_measure(tree, dsn, figure, FIGURES[figure], env))
                    finally:
                        drop_database(cluster.admin, db)
    finally:
        cluster.close()
    return results


def run(base: str, rounds: int, figures: list[str]) -> Results:
    with tempfile.TemporaryDirectory(prefix="bench-ab-") as tmp:
        worktree = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(HERE), "worktree", "add", "--detach", "-q", str(worktree), base], check=True)
        try:
            return alternate([("base", worktree, None), ("new", HERE, None)], rounds, figures)
        finally:
            subprocess.run(["git", "-C", str(HERE), "worktree", "remove", "--force", str(worktree)], check=False)


def report(base: str, results: Results, new: str = "new (this tree)", old: str = "") -> str:
    lines = [
        f"{'figure':10s} {old or 'base ' + base[:10]:>26s} {new:>26s} {'new/base':>9s} "
        f"{'client CPU us/job':>20s}"  # drain: the worker's process, server excluded
    ]
    for figure, sides in results.items():
        cells, medians, cpus = [], [], []
        for name in ("base", "new"):
            rates = [r for r, _ in sides[name]]
            medians.append(statistics.median(rates))
            cpus.append(statistics.median(c for _, c in sides[name]))
            cells.append(f"{medians[-1]:,.0f} [{min(rates):,.0f}-{max(rates):,.0f}]")
        lines.append(
            f"{figure:10s} {cells[0]:>26s} {cells[1]:>26s} {medians[1] / medians[0]:8.2f}x "
            f"{cpus[0]:>8.1f} -> {cpus[1]:<8.1f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.ab", description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the revision to compare this tree with (a commit, a tag, HEAD~3)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default=",".join(FIGURES), help=f"some of {', '.join(FIGURES)}")
    args = ap.parse_args(argv)
    figures = [f for f in args.only.split(",") if f]
    unknown = [f for f in figures if f not in FIGURES]
    if unknown or args.rounds < 1:
        ap.error(f"--only takes {', '.join(FIGURES)} (got {', '.join(unknown) or 'none'}); --rounds >= 1")
    results = run(args.base, args.rounds, figures)
    print(f"python -m bench.ab --base {args.base} --rounds {args.rounds}: medians of {args.rounds}, jobs/s")
    print(report(args.base, results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
