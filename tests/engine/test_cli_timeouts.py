"""A hung database answers every `jobs` command with a coded error within its timeouts, never a
hang: a frozen server (its postmaster stopped with SIGSTOP, a real PostgreSQL) is X_DB_UNREACHABLE
within the connect timeout, a statement stuck behind a lock is X_STATEMENT_TIMEOUT within the
statement timeout; both set by flag or environment. A malformed DSN is X_DSN_INVALID, whose fix
names the command that was run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
from typer.testing import CliRunner

from engine.cli import app
from engine.testing import EmbeddedPostgres
from engine.types import JobState
from tests.engine.test_cli_introspect import seed

JOBS = str(Path(sys.executable).parent / "jobsctl")


def jobs(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run(
        [JOBS, *args], capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
    )
    return done, time.monotonic() - started


def test_jobs_queues_against_a_frozen_server_answers_x_db_unreachable_within_the_connect_timeout(
    pg_cluster: EmbeddedPostgres, pg_dsn: str
) -> None:
    with pg_cluster.frozen():
        r, took = jobs("--connect-timeout", "2", "queues", "--dsn", pg_dsn)
        assert r.returncode == 1 and "error X_DB_UNREACHABLE" in r.stderr, r.stderr
        assert "no answer within 2 s (connect_timeout)" in r.stderr
        assert took < 2 + 4  # the timeout, and the interpreter's start
        r, took = jobs("queues", "--dsn", pg_dsn, "--json", env={"JOBS_CONNECT_TIMEOUT": "3"})
        assert r.returncode == 1 and json.loads(r.stderr)["error"]["code"] == "X_DB_UNREACHABLE"
        assert "no answer within 3 s" in r.stderr and took < 3 + 4
    r, _ = jobs("queues", "--dsn", pg_dsn)  # thawed: it answers again
    assert r.returncode == 0, r.stderr


def test_a_statement_stuck_behind_a_lock_is_cut_off_by_the_statement_timeout(pg_dsn: str) -> None:
    (ready,) = seed(pg_dsn, JobState.READY)
    with psycopg.connect(pg_dsn) as holder:  # a transaction holding the job's row
        holder.execute("select 1 from jobs.job where id = %s for update", (ready.id,))
        started = time.monotonic()
        r = CliRunner().invoke(app, ["--statement-timeout", "0.5", "cancel", ready.id, "--dsn", pg_dsn])
        took = time.monotonic() - started
        assert r.exit_code == 1 and "X_STATEMENT_TIMEOUT" in r.stderr and "statement timeout" in r.stderr, r.output
        assert "fix: export JOBS_STATEMENT_TIMEOUT=30" in r.stderr and took < 5
        r = CliRunner().invoke(app, ["cancel", ready.id, "--dsn", pg_dsn], env={"JOBS_STATEMENT_TIMEOUT": "0.5"})
        assert r.exit_code == 1 and "X_STATEMENT_TIMEOUT" in r.stderr
    r = CliRunner().invoke(app, ["cancel", ready.id, "--dsn", pg_dsn])
    assert r.exit_code == 0, r.output  # nothing changed by the cut-off ones: it cancels now


def test_a_connect_timeout_below_libpqs_floor_is_refused_not_rounded() -> None:
    r = CliRunner().invoke(app, ["--connect-timeout", "1", "queues", "--dsn", "postgresql://db/app"])
    assert r.exit_code == 1 and "X_INVALID_ARGUMENT" in r.stderr and "--connect-timeout 2 queues" in r.stderr


def test_a_malformed_port_is_x_dsn_invalid_and_its_fix_names_the_command_run() -> None:
    for dsn in ("postgresql://bob@db.example:notaport/app", "host=db.example port=x5432"):
        for cmd in (["queues"], ["ls"], ["show", "0d64484e051c"], ["dead"], ["why", "billing"]):
            r = CliRunner().invoke(app, [*cmd, "--dsn", dsn])
            assert r.exit_code == 2 and "error X_DSN_INVALID" in r.stderr and "not a port number" in r.stderr
            assert f"fix: jobsctl {cmd[0]} --dsn postgresql://USER@HOST:5432/DBNAME" in r.stderr
            assert "install" not in r.stderr


def _resolved(dsn: str, *flags: str) -> dict[str, str]:
    """The DSN `jobs [flags] queues --dsn DSN` would open, as its parameters."""
    from psycopg import conninfo

    from engine.cli import admin

    kept = (admin.CONNECTIONS.connect, admin.CONNECTIONS.statement, admin.CONNECTIONS.command)
    try:
        connect = int(flags[flags.index("--connect-timeout") + 1]) if "--connect-timeout" in flags else None
        statement = float(flags[flags.index("--statement-timeout") + 1]) if "--statement-timeout" in flags else None
        admin.set_connections(connect, statement, "queues")
        return conninfo.conninfo_to_dict(admin.resolve_dsn(dsn))  # type: ignore[return-value]
    finally:
        admin.CONNECTIONS.connect, admin.CONNECTIONS.statement, admin.CONNECTIONS.command = kept


def test_a_timeout_given_by_flag_wins_over_the_dsns_own_and_a_default_fills_only_what_it_leaves_out() -> None:
    own = "postgresql://db/app?connect_timeout=10&options=-c%20statement_timeout%3D5000"
    assert _resolved(own)["connect_timeout"] == "10"  # the DSN's own, not the default 5
    assert _resolved(own)["options"] == "-c statement_timeout=5000"
    given = _resolved(own, "--connect-timeout", "3", "--statement-timeout", "0.5")
    assert given["connect_timeout"] == "3"
    assert given["options"] == "-c statement_timeout=5000 -c statement_timeout=500"  # the last one wins
    bare = _resolved("postgresql://db/app")
    assert (bare["connect_timeout"], bare["options"]) == ("5", "-c statement_timeout=10000")  # the defaults


def test_a_timeout_given_with_a_memory_dsn_is_refused_it_opens_no_connection_to_time() -> None:
    r = CliRunner().invoke(app, ["--statement-timeout", "5", "queues", "--dsn", "memory://"])
    assert r.exit_code == 1 and "X_INVALID_ARGUMENT" in r.stderr and "memory:// opens none" in r.stderr
    assert "fix: jobsctl queues --dsn memory://\n" in r.stderr and "--statement-timeout (a flag" in r.stderr
    r = CliRunner().invoke(app, ["queues", "--dsn", "memory://"], env={"JOBS_CONNECT_TIMEOUT": "3"})
    assert r.exit_code == 1 and "--connect-timeout (a flag" in r.stderr
    assert CliRunner().invoke(app, ["queues", "--dsn", "memory://"]).exit_code == 0
