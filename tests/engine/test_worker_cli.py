"""`jobsctl worker` refuses bad input before it touches the database: a clear error with a fix
line and a non-zero exit. The DSN points at a server that does not exist, so any attempt to
connect would answer X_DB_UNREACHABLE instead of the error under test."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from engine.cli import app

NOWHERE = "host=/nonexistent-socket-dir dbname=nothing user=nobody"
APP = "tests.engine.test_worker_app"


@pytest.mark.parametrize(
    ("args", "code", "fix"),
    [
        (["no_such_module_xyz"], "X_WORKER_TARGET", "fix: python -c 'import no_such_module_xyz'"),
        ([f"{APP}:missing"], "X_WORKER_TARGET", f"fix: jobsctl worker {APP} --dsn"),
        ([f"{APP}:not_a_job"], "X_WORKER_TARGET", f"fix: jobsctl worker {APP} --dsn"),
        (
            ["engine.clock"],
            "X_WORKER_TARGET",
            "fix: add @job(name=..., idempotency_key=...) to a handler in engine.clock",
        ),
        ([APP, "--concurrency", "0"], "X_INVALID_ARGUMENT", f"fix: jobsctl worker {APP} --concurrency 10"),
        ([APP, "--concurrency", "-3"], "X_INVALID_ARGUMENT", f"fix: jobsctl worker {APP} --concurrency 10"),
        ([APP, "--grace", "0"], "X_INVALID_ARGUMENT", f"fix: jobsctl worker {APP} --grace 30"),
        ([APP, "--lease-seconds", "-1"], "X_INVALID_ARGUMENT", f"fix: jobsctl worker {APP} --lease-seconds 30"),
        ([APP, "--queues", "nope"], "X_INVALID_ARGUMENT", f"fix: jobsctl worker {APP} --queues pg-workers"),
        ([APP, "--loop", "tokio"], "X_INVALID_ARGUMENT", f"fix: jobsctl worker {APP} --loop auto"),
    ],
)
def test_bad_worker_input_is_refused_before_the_database(args: list[str], code: str, fix: str) -> None:
    result = CliRunner().invoke(app, ["worker", *args, "--dsn", NOWHERE])
    assert result.exit_code != 0
    err = result.stderr if hasattr(result, "stderr") else result.output
    assert f"error {code}:" in err and fix in err
    assert "X_DB_UNREACHABLE" not in err


def test_a_missing_dsn_is_refused_with_the_export_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JOBS_DSN", raising=False)
    result = CliRunner().invoke(app, ["worker", APP])
    assert result.exit_code != 0 and "export JOBS_DSN=" in result.stderr


def test_the_worker_runs_on_uvloop_when_it_is_installed_unless_told_otherwise() -> None:
    import asyncio

    import uvloop

    from engine.cli.worker import event_loop_runner

    assert event_loop_runner("auto", APP) is uvloop.run and event_loop_runner("uvloop", APP) is uvloop.run
    assert event_loop_runner("asyncio", APP) is asyncio.run


@pytest.mark.parametrize(
    ("args", "fix"),
    [
        (["--retention", "0"], f"fix: jobsctl worker {APP} --retention 604800"),
        (["--dead-retention", "-1"], f"fix: jobsctl worker {APP} --dead-retention 2592000"),
        (["--dead-retention", "3600"], f"fix: jobsctl worker {APP} --retention 3600 --dead-retention 3600"),
        (
            ["--retention", "600", "--dead-retention", "60"],
            f"fix: jobsctl worker {APP} --retention 60 --dead-retention 60",
        ),
    ],
)
def test_a_retention_the_pruner_cannot_keep_is_refused_before_the_database(args: list[str], fix: str) -> None:
    result = CliRunner().invoke(app, ["worker", APP, *args, "--dsn", NOWHERE])
    assert result.exit_code != 0
    assert "error X_INVALID_ARGUMENT:" in result.stderr and fix in result.stderr
    assert "X_DB_UNREACHABLE" not in result.stderr


def test_retention_options_reach_the_maintenance_config(monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.cli import worker as cli

    seen: dict[str, object] = {}

    async def serve(dsn: str, registry: object, options: object, maint: object, *rest: object) -> int:
        seen["maint"] = maint
        return 0

    monkeypatch.setattr(cli, "_serve", serve)
    assert CliRunner().invoke(app, ["worker", APP, "--retention", "60", "--dsn", NOWHERE]).exit_code == 0
    maint = seen["maint"]
    assert (maint.retention, maint.dead_retention) == (60, 30 * 86400)  # type: ignore[attr-defined]
    assert (
        CliRunner()
        .invoke(app, ["worker", APP, "--retention", "60", "--dead-retention", "90", "--dsn", NOWHERE])
        .exit_code
        == 0
    )
    assert (seen["maint"].retention, seen["maint"].dead_retention) == (60, 90)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("args", "fix"),
    [
        (["--reindex-interval", "-5"], f"fix: jobsctl worker {APP} --reindex-interval 600"),
        (["--reindex-min-mb", "0"], f"fix: jobsctl worker {APP} --reindex-min-mb 16"),
        (["--reindex-interval", "0", "--reindex-min-mb", "4"], f"fix: jobsctl worker {APP} --reindex-interval 0"),
    ],
)
def test_an_index_upkeep_option_that_cannot_work_is_refused_before_the_database(args: list[str], fix: str) -> None:
    result = CliRunner().invoke(app, ["worker", APP, *args, "--dsn", NOWHERE])
    assert result.exit_code != 0
    assert "error X_INVALID_ARGUMENT:" in result.stderr and fix in result.stderr
    assert "X_DB_UNREACHABLE" not in result.stderr


def test_index_upkeep_options_reach_the_maintenance_config(monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.cli import worker as cli

    seen: list[object] = []

    async def serve(dsn: str, registry: object, options: object, maint: object, *rest: object) -> int:
        seen.append(maint)
        return 0

    monkeypatch.setattr(cli, "_serve", serve)
    for args in (["--reindex-interval", "60", "--reindex-min-mb", "4"], ["--reindex-interval", "0"], []):
        assert CliRunner().invoke(app, ["worker", APP, *args, "--dsn", NOWHERE]).exit_code == 0
    got = [(m.reindex_interval, m.reindex_min_bytes) for m in seen]  # type: ignore[attr-defined]
    assert got == [(60, 4 * 1024 * 1024), (None, 16 * 1024 * 1024), (600, 16 * 1024 * 1024)]


def test_the_vacuum_threshold_reaches_the_maintenance_config_and_zero_or_none_leaves_it_to_autovacuum(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from engine.cli import worker as cli

    seen: list[object] = []

    async def serve(dsn: str, registry: object, options: object, maint: object, *rest: object) -> int:
        seen.append(maint)
        return 0

    monkeypatch.setattr(cli, "_serve", serve)
    for args in (["--vacuum-threshold", "500"], ["--vacuum-threshold", "0"], []):
        assert CliRunner().invoke(app, ["worker", APP, *args, "--dsn", NOWHERE]).exit_code == 0
    assert [m.vacuum_threshold for m in seen] == [500, None, None]  # type: ignore[attr-defined]
    bad = CliRunner().invoke(app, ["worker", APP, "--vacuum-threshold", "-1", "--dsn", NOWHERE])
    assert bad.exit_code != 0 and f"fix: jobsctl worker {APP} --vacuum-threshold 10000" in bad.stderr


def test_every_worker_flag_reaches_the_worker_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each flag named after a WorkerConfig field lands in the worker's options with the value
    given (--poll-interval pacing its relay too: test_api's embedded worker, the same
    maintained_worker)."""
    from engine.cli import worker as cli
    from engine.runtime.worker_config import WorkerConfig

    seen: list[dict[str, object]] = []

    async def serve(dsn: str, registry: object, options: dict[str, object], *rest: object) -> int:
        seen.append(options)
        return 0

    monkeypatch.setattr(cli, "_serve", serve)
    given = {
        "concurrency": 3,
        "batch_size": 7,
        "ack_batch": 11,
        "flush_interval": 0.02,
        "lease_seconds": 12.0,
        "grace": 4.0,
        "close_timeout": 6.0,
        "start_timeout": 9.0,
        "poll_interval": 2.5,
        "traceback_limit": 100,
    }
    flags = [x for name, v in given.items() for x in (f"--{name.replace('_', '-')}", str(v))]
    r = CliRunner().invoke(app, ["worker", APP, *flags, "--burst", "--dsn", NOWHERE])
    assert r.exit_code == 0, r.stderr
    options = seen[-1]
    config = WorkerConfig(**{k: v for k, v in options.items() if k in WorkerConfig.__dataclass_fields__})
    assert {name: getattr(config, name) for name in given} == given and config.burst is True
    assert options["relay"] is True
    assert CliRunner().invoke(app, ["worker", APP, "--no-relay", "--dsn", NOWHERE]).exit_code == 0
    assert seen[-1]["relay"] is False
