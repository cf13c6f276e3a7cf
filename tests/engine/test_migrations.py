"""The schema's migrations (sql/migrations) and their runner: from empty, from the first release's
schema.sql (the baseline), with live jobs, two migrators at once, a changed file, and the SQL
another tool runs instead of `jobsctl migrate`."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import tomllib
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from engine.drivers.migrations import migrations, parse_migrations
from engine.drivers.postgres import PostgresDriver
from engine.drivers.sqlfiles import Q
from engine.errors import X_STATEMENT_TIMEOUT, JobsError
from engine.schema import migrate, migration_sql, migration_status, pending_sql
from engine.types import Claim, Nack

ROOT = Path(__file__).resolve().parents[2]
# What the first release's `jobsctl install` ran: its schema.sql, verbatim (schema_version 3).
FIRST_RELEASE = (Path(__file__).parent / "data" / "schema_0_1.sql").read_text()


def _run(dsn: str, script: str) -> None:
    with psycopg.connect(dsn) as conn:  # one transaction, as `psql --single-transaction` runs a file
        conn.execute(script)  # type: ignore[arg-type]


def catalog(dsn: str, *, without: tuple[str, ...] = ()) -> dict[str, Any]:
    """Everything the jobs schema is made of: tables and columns, indexes, constraints,
    statistics objects, and the rows a migration seeds."""
    q = {
        "columns": """select table_name, ordinal_position, column_name, data_type, is_nullable,
                             column_default, is_identity
                      from information_schema.columns where table_schema = 'jobs' order by 1, 2""",
        "indexes": "select tablename, indexname, indexdef from pg_indexes where schemaname = 'jobs' order by 1, 2",
        "constraints": """select conrelid::regclass::text, conname, pg_get_constraintdef(oid) from pg_constraint
                          where connamespace = 'jobs'::regnamespace order by 1, 2""",
        "statistics": """select stxname, pg_get_statisticsobjdef(oid) from pg_statistic_ext
                         where stxnamespace = 'jobs'::regnamespace order by 1""",
        "meta": "select key, value from jobs.meta order by key",
        "gauge_snapshot": "select id, taken_at::text, gauges::text from jobs.gauge_snapshot",
    }
    with psycopg.connect(dsn) as conn:
        out = {k: conn.execute(v).fetchall() for k, v in q.items()}  # type: ignore[call-overload]
    for k in ("columns", "indexes", "constraints"):
        out[k] = [r for r in out[k] if not any(str(r[0]).removeprefix("jobs.") == t for t in without)]
    return out


def test_0001_is_exactly_the_schema_the_first_release_installed(empty_db: Callable[[], str]) -> None:
    old, new = empty_db(), empty_db()
    _run(old, FIRST_RELEASE)
    assert [m.label for m in migrate(new, target=1)] == ["0001_initial"]
    assert catalog(new, without=("migration",)) == catalog(old)


def test_every_migration_from_empty_equals_an_upgrade_of_the_first_release(empty_db: Callable[[], str]) -> None:
    fresh, upgraded = empty_db(), empty_db()
    assert [m.version for m in migrate(fresh)] == [m.version for m in migrations()]
    _run(upgraded, FIRST_RELEASE)
    applied = migrate(upgraded)  # 0001 is the baseline: only the later ones run
    assert [m.version for m in applied] == [m.version for m in migrations()][1:]
    assert catalog(upgraded) == catalog(fresh)
    assert [(a.version, a.method) for a in migration_status(upgraded).applied][:1] == [(1, "baseline")]


def test_the_sql_another_tool_runs_equals_jobs_migrate_and_is_recorded(empty_db: Callable[[], str]) -> None:
    by_runner, by_tool_fresh, by_tool_old = empty_db(), empty_db(), empty_db()
    migrate(by_runner)
    _run(by_tool_fresh, migration_sql(0))
    _run(by_tool_old, FIRST_RELEASE)
    _run(by_tool_old, pending_sql(by_tool_old))
    for dsn in (by_tool_fresh, by_tool_old):
        assert catalog(dsn) == catalog(by_runner)
        status = migration_status(dsn)
        assert status.pending == () and migrate(dsn) == []
    assert {a.method for a in migration_status(by_tool_fresh).applied} == {"sql"}
    assert [a.method for a in migration_status(by_tool_old).applied][0] == "baseline"


def _live_jobs(dsn: str, now: datetime) -> set[tuple[str, str]]:
    """One job in each live state, written as the first release's engine wrote them."""
    states = ["ready", "delayed", "running", "suspended", "parked"]
    rows = []
    with psycopg.connect(dsn) as conn:
        for i, state in enumerate(states):
            job_id = f"0190c0de-0000-7000-8000-00000000000{i}"
            conn.execute(
                """insert into jobs.job (id, name, queue, idempotency_key, input, state, attempt, max_attempts,
                                         run, run_at, created_at, updated_at, claimed_by, claimed_at, lease_until)
                   values (%s, 'charge', 'billing', %s, '{"n": 1}', %s, %s, 3, %s, %s, %s, %s, %s, %s, %s)""",
                (
                    job_id,
                    f"k{i}",
                    state,
                    1 if state == "running" else 0,
                    1 if state == "running" else 0,
                    now + timedelta(hours=1) if state == "delayed" else now,
                    now,
                    now,
                    "w1" if state == "running" else None,
                    now if state == "running" else None,
                    now + timedelta(seconds=30) if state == "running" else None,
                ),
            )
            rows.append((job_id, state))
    return set(rows)


@pytest.mark.parametrize("start", ["first-release-schema", "migration-0001"])
async def test_upgrading_a_database_holding_live_jobs_loses_none(empty_db: Callable[[], str], start: str) -> None:
    dsn = empty_db()
    if start == "first-release-schema":
        _run(dsn, FIRST_RELEASE)
    else:
        migrate(dsn, target=1)
    now = datetime(2026, 12, 3, 12, tzinfo=UTC)
    live = _live_jobs(dsn, now)
    migrate(dsn)
    driver = PostgresDriver(dsn)
    try:
        await driver.open()
        got = {(job_id, (await driver.job_get(job_id=job_id)).state.value) for job_id, _ in live}  # type: ignore[union-attr]
        assert got == live
        # The running one settles on the upgraded schema, fenced on its claimant as before.
        running = next(job_id for job_id, state in live if state == "running")
        nack = Nack(Claim(running, "w1", 1), "retry", run_at=now, error="boom", error_code="X_HANDLER_FAILED")
        assert await driver.job_nack(nack=nack, now=now)
    finally:
        await driver.close()


async def test_an_engine_refuses_a_database_with_no_schema_or_pending_migrations(empty_db: Callable[[], str]) -> None:
    dsn = empty_db()
    driver = PostgresDriver(dsn)
    try:
        with pytest.raises(JobsError) as missing:
            await driver.open()
        assert missing.value.code == "X_SCHEMA_MISSING" and missing.value.fix == 'jobsctl migrate --dsn "$JOBS_DSN"'
        migrate(dsn, target=1)
        with pytest.raises(JobsError) as outdated:
            await driver.open()
        assert outdated.value.code == "X_SCHEMA_OUTDATED" and outdated.value.fix == 'jobsctl migrate --dsn "$JOBS_DSN"'
        assert migrations()[1].label in outdated.value.cause
        migrate(dsn)
        await driver.open()
    finally:
        await driver.close()


async def test_an_engine_refuses_a_first_release_database_until_it_is_migrated(empty_db: Callable[[], str]) -> None:
    dsn = empty_db()
    _run(dsn, FIRST_RELEASE)
    status = migration_status(dsn)  # reads only: the baseline is recognised, nothing is written
    assert [(a.version, a.method, a.applied_at) for a in status.applied] == [(1, "baseline", None)]
    with psycopg.connect(dsn) as conn:
        assert conn.execute("select to_regclass('jobs.migration')").fetchone() == (None,)
    driver = PostgresDriver(dsn)
    try:
        with pytest.raises(JobsError) as err:
            await driver.open()
        assert err.value.code == "X_SCHEMA_OUTDATED"
        migrate(dsn)
        await driver.open()
    finally:
        await driver.close()


def test_migrations_run_without_the_databases_default_statement_timeout_unless_given_one(
    empty_db: Callable[[], str],
) -> None:
    # Managed databases often set one for every session of a role or a database: it would cut an
    # index build over a big table off half way, and the migration would fail at every rerun.
    dsn = empty_db()
    with psycopg.connect(dsn, autocommit=True) as admin:
        name = psycopg.sql.Identifier(admin.execute("select current_database()").fetchone()[0])  # type: ignore[index]
        admin.execute(psycopg.sql.SQL("alter database {} set statement_timeout = '1ms'").format(name))
    migrate(dsn)
    assert migration_status(dsn).pending == ()
    given = psycopg.conninfo.make_conninfo(
        dsn, options="-c statement_timeout=200"
    )  # jobsctl migrate --statement-timeout
    # A long transaction holds the table the status reads; the holder runs without the database's
    # 1 ms default, which a busy machine's lock statement alone can outlast.
    unbounded = psycopg.conninfo.make_conninfo(dsn, options="-c statement_timeout=0")
    with psycopg.connect(unbounded) as holder:
        holder.execute("lock table jobs.migration in access exclusive mode")
        with pytest.raises(JobsError) as err:  # one given is kept, and its end is the engine's error
            migration_status(given)
    assert err.value.code == X_STATEMENT_TIMEOUT


def test_two_migrators_at_once_apply_each_migration_once(empty_db: Callable[[], str]) -> None:
    dsn = empty_db()
    start = threading.Barrier(2)
    results: list[list[int]] = []
    errors: list[BaseException] = []

    def run() -> None:
        start.wait()
        try:
            results.append([m.version for m in migrate(dsn)])
        except BaseException as exc:  # noqa: BLE001  (reported by the assertion below)
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert errors == []
    assert sorted(v for r in results for v in r) == [m.version for m in migrations()]
    assert [a.version for a in migration_status(dsn).applied] == [m.version for m in migrations()]


def test_a_changed_applied_migration_is_refused_naming_the_file(empty_db: Callable[[], str]) -> None:
    dsn = empty_db()
    migrate(dsn)
    with psycopg.connect(dsn) as conn:
        conn.execute("update jobs.migration set checksum = repeat('0', 64) where version = 1")
    assert [m.label for m, _ in migration_status(dsn).changed] == ["0001_initial"]
    with pytest.raises(JobsError) as err:
        migrate(dsn)
    assert err.value.code == "X_MIGRATION_CHANGED"
    assert "0001_initial" in err.value.cause and "000000000000" in err.value.cause
    assert err.value.fix == "git checkout -- sql/migrations/0001_initial.sql"


def test_a_pre_release_schema_version_is_refused_before_anything_is_written(empty_db: Callable[[], str]) -> None:
    dsn = empty_db()
    _run(dsn, FIRST_RELEASE)
    with psycopg.connect(dsn) as conn:
        conn.execute("update jobs.meta set value = '2' where key = 'schema_version'")
    with pytest.raises(JobsError) as err:
        migrate(dsn)
    assert err.value.code == "X_SCHEMA_OUTDATED" and "schema version 2" in err.value.cause
    with psycopg.connect(dsn) as conn:
        assert conn.execute("select to_regclass('jobs.migration')").fetchone() == (None,)


def test_migration_files_are_numbered_from_0001_without_gap_or_repeat() -> None:
    assert [m.version for m in migrations()] == list(range(1, len(migrations()) + 1))
    for files, says in [
        ({"0001_a.sql": "", "0001_b.sql": ""}, "two migrations numbered 0001"),
        ({"0001_a.sql": "", "0003_c.sql": ""}, "skips 0002"),
        ({"1_a.sql": ""}, "not named NNNN_name.sql"),
    ]:
        with pytest.raises(JobsError) as err:
            parse_migrations(files)
        assert err.value.code == "X_SQL_CATALOG" and says in err.value.cause


def test_migrations_pass_through_any_db_api_execute_unchanged() -> None:
    # Alembic's op.execute, Django's RunSQL and a psycopg2 cursor read % and :name as parameters.
    for label, text in [(m.label, m.text) for m in migrations()] + [("migration_sql(0)", migration_sql(0))]:
        assert "%" not in text, label
        assert not re.search(r"(?<![:\w]):[A-Za-z_]\w*", text), label


def test_migrations_load_from_an_installed_wheel_layout(tmp_path: Path) -> None:
    # The wheel force-includes sql/ as engine/_sql (pyproject); a copy of that layout loads them.
    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert include["force-include"]["sql"] == "engine/_sql"
    shutil.copytree(ROOT / "engine", tmp_path / "engine", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "sql", tmp_path / "engine" / "_sql")
    probe = "from engine.drivers.migrations import migrations, sql_dir; print(sql_dir(), len(migrations()))"
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out == [str(tmp_path / "engine" / "_sql"), str(len(migrations()))]


def test_a_failing_migration_is_rolled_back_and_reported(empty_db: Callable[[], str]) -> None:
    dsn = empty_db()
    migrate(dsn, target=1)
    with psycopg.connect(dsn) as conn:  # what the next migration adds is already there, by hand
        conn.execute("alter table jobs.attempt add column traceback text")
    with pytest.raises(JobsError) as err:
        migrate(dsn)
    assert err.value.code == "X_MIGRATION_FAILED"
    assert migrations()[1].label in err.value.cause and "the schema stays at 0001" in err.value.cause
    assert [a.version for a in migration_status(dsn).applied] == [1]


def test_a_wrapper_pins_its_range_so_two_wrappers_apply_each_migration_once(empty_db: Callable[[], str]) -> None:
    dsn, last = empty_db(), migrations()[-1].version
    _run(dsn, migration_sql(since=0, until=1))  # the wrapper written for the first release
    _run(dsn, migration_sql(since=1, until=last))  # the next upgrade's wrapper
    assert migration_status(dsn).pending == ()
    assert "0001_initial" not in migration_sql(since=1) and "-- 0002_" not in migration_sql(since=0, until=1)
    with pytest.raises(JobsError) as err:
        migration_sql(since=1, until=last + 1)
    assert err.value.code == "X_INVALID_ARGUMENT"


def test_migrate_refuses_a_server_older_than_jobs_supports_and_applies_nothing(
    empty_db: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    dsn = empty_db()
    check = Q.migration_server_check
    assert "< 150000" in check.text  # the floor; raised past this server's version below
    monkeypatch.setattr(Q, "migration_server_check", replace(check, text=check.text.replace("< 150000", "< 990000")))
    with pytest.raises(JobsError) as err:
        migrate(dsn)
    assert err.value.code == "X_SERVER_UNSUPPORTED"
    assert "jobs needs PostgreSQL 15 or later; this server runs " in err.value.cause
    assert "nothing was applied" in err.value.cause and "pg_upgrade" in err.value.fix
    with psycopg.connect(dsn) as conn:
        assert conn.execute("select to_regclass('jobs.migration')").fetchone() == (None,)


def test_the_migration_script_checks_the_server_before_it_writes_anything() -> None:
    script = migration_sql(since=0)
    first = script.index("server_version_num")
    assert first < script.index("pg_advisory_xact_lock") < script.index("create table if not exists jobs.migration")
