"""`jobsctl worker --audit-retention SECONDS`: how long the maintenance leader keeps the audit log's
entries reaches its MaintenanceConfig (a year when not given), checked before the database is
touched as every other retention is: a value the pruner cannot keep is refused with the option's
own fix, and so is the option given with --no-maintenance, which never leads."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from engine.audit import RETENTION
from engine.cli import app

NOWHERE = "host=/nonexistent-socket-dir dbname=nothing user=nobody"
APP = "tests.engine.test_worker_app"


def test_the_audit_retention_reaches_the_maintenance_config_and_defaults_to_a_year(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from engine.cli import worker as cli

    seen: list[object] = []

    async def serve(dsn: str, registry: object, options: object, maint: object, *rest: object) -> int:
        seen.append(maint)
        return 0

    monkeypatch.setattr(cli, "_serve", serve)
    for args in (["--audit-retention", "86400"], ["--audit-retention", "2592000", "--retention", "60"], []):
        r = CliRunner().invoke(app, ["worker", APP, *args, "--dsn", NOWHERE])
        assert r.exit_code == 0, r.output
    kept = [(m.audit_retention, m.retention) for m in seen]  # type: ignore[attr-defined]
    assert kept == [(86400, 7 * 86400), (2592000, 60), (RETENTION, 7 * 86400)]
    assert RETENTION == 365 * 86400


@pytest.mark.parametrize("value", ["0", "-1", "inf", "1e300"])
def test_an_audit_retention_the_pruner_cannot_keep_is_refused_before_the_database(value: str) -> None:
    r = CliRunner().invoke(app, ["worker", APP, "--audit-retention", value, "--dsn", NOWHERE])
    assert r.exit_code == 1, r.output
    assert r.stderr.startswith(f"error X_INVALID_ARGUMENT: --audit-retention {float(value)!r} must be ")
    assert f"  fix: jobsctl worker {APP} --audit-retention 31536000\n" in r.stderr
    assert "X_DB_UNREACHABLE" not in r.stderr


def test_the_audit_retention_with_no_maintenance_is_refused_rather_than_dropped() -> None:
    r = CliRunner().invoke(app, ["worker", APP, "--no-maintenance", "--audit-retention", "60", "--dsn", NOWHERE])
    assert r.exit_code == 1, r.output
    assert "--audit-retention set what the maintenance leader does, and --no-maintenance never leads" in r.stderr
    assert f"  fix: jobsctl worker {APP} --no-maintenance\n" in r.stderr
