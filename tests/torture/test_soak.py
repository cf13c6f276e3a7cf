"""The soak at CI size (bench/soak): real workers under a steady rate for half a minute, sampled.
It asserts what must hold whatever the machine's speed: every job enqueued was started, and
every sample has its figures (rate, latency, each worker's memory, the jobs table's dead tuples
and size); the figures themselves are printed, and bench/README.md holds the long run's."""

from __future__ import annotations

import asyncio

import pytest

from bench.soak.run import SoakConfig, run_soak

pytestmark = pytest.mark.timeout(300)


def test_a_soak_at_a_steady_rate_loses_nothing_and_reports_every_figure() -> None:
    cfg = SoakConfig(seconds=30.0, rate=100.0, workers=2, concurrency=20, retention=10.0, sample=5.0)
    report = asyncio.run(run_soak(cfg))
    print("\n" + "\n".join(report.lines()))
    assert report.enqueued >= 0.5 * cfg.rate * cfg.seconds  # the producer kept (about) its schedule
    assert report.started == report.enqueued  # every enqueued job was started, once
    assert len(report.samples) == int(cfg.seconds / cfg.sample)
    for s in report.samples:
        assert s.started > 0 and s.p50_ms is not None and s.p99_ms is not None
        assert len(s.rss_mb) == cfg.workers and all(r > 0 for r in s.rss_mb)
        assert s.table_mb > 0
    summary = report.summary()
    assert summary["throughput_ratio"] is not None and summary["rss_growth_mb"] != ()


def test_the_backlog_drain_measures_both_depths(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.soak import backlog

    args = ["--small", "2000", "--large", "6000", "--skip", "200", "--window", "1000", "--large-window", "3000"]
    assert backlog.main([*args, "--runs", "1"]) == 0
    out = capsys.readouterr().out
    print(out)
    assert "run 1 decimal small:" in out and "run 1 decimal large:" in out
    assert (
        "backlog drain (2 workers; jobs 200 to 1,200 of the small, to 3,200 of the large), keys decimal: 2,000 ready"
        in out
    )
    assert "ratio" in out
