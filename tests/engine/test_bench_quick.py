"""`python -m bench --quick` runs end to end and produces every figure (speed is never asserted:
it is judged from the table, on a quiet machine, never by a timed test)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pgqueuer  # noqa: E402,F401  (the test extra installs it: the peer runs in the same invocation)
import pytest

from bench import ours  # noqa: E402
from bench.report import expected_figures  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(300)  # a whole (reduced) bench: worker processes start a dozen times
def test_quick_bench_produces_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "--quick",
            "--only",
            "enqueue,limit,drain,latency,steps,console",
            "--drain-jobs",
            "1200",
            "--json",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    doc = json.loads(out.read_text())
    assert not doc["errors"], doc["errors"]  # a suite that raised: the bench goes on, its figures missing
    assert doc["meta"]["plan"]["drain"] == 1200  # --drain-jobs: every drain run empties that many
    # ... and the run stays quick: one enqueue run, one drain setting (the projections' reduced
    # seeds go with them; a full-size outbox seed took this test from ~20 to ~80 s).
    assert doc["meta"]["plan"]["quick"] is True
    runs = {(f["key"], f["system"]): f for f in doc["figures"]}
    assert runs[("enqueue.single", "ours")]["runs"] == 1
    assert "also" not in runs[("drain.p1", "ours")]["note"], runs[("drain.p1", "ours")]["note"]
    got = {(f["key"], f["system"]) for f in doc["figures"]}
    want = expected_figures(worker=ours.worker_available(), steps=ours.steps_available())
    if importlib.util.find_spec("bench.projections") is not None:  # the introspection bench's figures
        assert any(key.startswith("console.") for key, _ in got), "no console.* figure from bench/projections.py"
    missing = [w for w in want if w not in got]
    assert not missing, f"the quick bench did not produce {missing}"
    for f in doc["figures"]:
        assert f["runs"] >= 1 and f["min"] <= f["median"] <= f["max"], f
        assert f["median"] > 0, f  # a zero throughput or latency means the figure was not measured
    assert {t["key"] for t in doc["targets"]} >= {"drain.p1", "enqueue.single", "latency.r100.p99"}
    assert "| ours" not in done.stdout and "ours/peer" in done.stdout  # the table was printed


def test_durable_bench_runs_its_server_with_postgres_defaults_for_durability() -> None:
    from bench.cluster import BenchCluster

    durable, default = BenchCluster(durable=True).pg._settings, BenchCluster().pg._settings
    assert {k: durable.get(k) for k in ("fsync", "synchronous_commit", "full_page_writes")} == dict.fromkeys(
        ("fsync", "synchronous_commit", "full_page_writes"), "on"
    )
    assert "fsync" not in default  # the default regime keeps embedded_pg's fsync=off
    # On a disk: in the default cluster's tmpfs an fsync is free and nothing would be flushed.
    assert BenchCluster(durable=True).pg._base_dir == "/var/tmp"


@pytest.mark.timeout(300)
def test_the_cost_suite_counts_each_systems_statements_and_commits_per_job(tmp_path: Path) -> None:
    from bench.costs import FIGURES

    out = tmp_path / "costs.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--only", "costs", "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    figs = {(f["key"], f["system"]): f["median"] for f in json.loads(out.read_text())["figures"]}
    for system in ("ours", "peer"):
        for what in ("enqueue.single", "enqueue.batch100", "drain.p1"):
            assert all(figs[(f"cost.{what}.{name}", system)] > 0 for name in FIGURES), (system, what, figs)
        # One job a call: at least one statement and one commit each (per 1,000 jobs); a batch of
        # 100 shares them, so it asks for fewer; the harness's own polls are not counted.
        assert figs[("cost.enqueue.single.statements", system)] >= 1000
        assert figs[("cost.enqueue.single.commits", system)] >= 1000
        assert figs[("cost.enqueue.batch100.commits", system)] < 100


def test_drain_jobs_refuses_a_size_below_one(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.cli import main

    with pytest.raises(SystemExit) as refused:
        main(["--drain-jobs", "0"])
    assert refused.value.code == 2 and "--drain-jobs must be >= 1" in capsys.readouterr().err


def test_a_swept_drains_cpu_a_job_is_the_one_of_the_setting_whose_rate_was_kept() -> None:
    from bench.cli import best_of
    from bench.stats import Results

    res = Results()
    for label, rate, cpu in (("slow", 10_000.0, 50.0), ("fast", 20_000.0, 70.0)):
        res.add(f"drain.p2@{label}", "ours", rate, note=label)
        res.add(f"drain.p2.cpu@{label}", "ours", cpu, unit="us/job", higher_is_better=False, note=label)
    best_of(res)
    kept, cpu = res.get("drain.p2", "ours"), res.get("drain.p2.cpu", "ours")
    assert kept is not None and cpu is not None
    assert (kept.median, cpu.median) == (20_000.0, 70.0)  # the fast setting's pair, not the lower CPU
    assert sorted(res.keys()) == ["drain.p2", "drain.p2.cpu"]
