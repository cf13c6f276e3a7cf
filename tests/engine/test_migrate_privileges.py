"""`jobsctl migrate` (and `install`, `--status`, `--sql`) run by a login that does not own the
database or the jobs schema: README.md's roles (sql/roles/roles.sql, `create role shop login in
role jobs_writer`). With nothing pending it is told "nothing to apply" and nothing is written; with
something to create or apply it is refused as X_PERMISSION_DENIED naming the login and what it
lacks, with the script for the owner as its fix, never a psycopg traceback. On a private cluster:
roles are the cluster's, not a database's."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from typer.testing import CliRunner

from engine.cli import app
from engine.drivers.migrations import migrations
from engine.schema import migrate
from engine.testing import EmbeddedPostgres

ROLES = Path(__file__).resolve().parents[2] / "sql" / "roles" / "roles.sql"
LAST = migrations()[-1]
_DATABASES = itertools.count()
runner = CliRunner()


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddedPostgres]:
    """A private cluster with README's two group roles, a login in each, and a login in neither."""
    with EmbeddedPostgres() as pg:
        with psycopg.connect(pg.conninfo(), autocommit=True) as conn:
            conn.execute("create role jobs_reader nologin")
            conn.execute("create role jobs_writer nologin in role jobs_reader")
            conn.execute("create role shop login in role jobs_writer")
            conn.execute("create role oncall login in role jobs_reader")
            conn.execute("create role stranger login")
        yield pg


def _grants() -> str:
    """roles.sql's grants on the jobs schema, without the role creation the server fixture did."""
    statements = (s.strip() for s in ROLES.read_text().split(";"))
    kept = []
    for s in statements:
        body = "\n".join(line for line in s.splitlines() if not line.startswith("--")).strip()
        if body and not body.startswith("create role"):
            kept.append(body)
    return ";\n".join(kept) + ";"


def _database(server: EmbeddedPostgres, *, upto: int | None) -> Iterator[str]:
    """A fresh database owned by the superuser: migrated up to ``upto`` with roles.sql's grants
    given, or with no jobs schema at all (``upto`` None)."""
    name = f"priv_{next(_DATABASES)}"
    owner = server.create_database(name)
    if upto is not None:
        migrate(owner, target=upto)
        with psycopg.connect(owner, autocommit=True) as conn:
            conn.execute(_grants())
    yield owner
    server.drop_database(name)


@pytest.fixture
def current(server: EmbeddedPostgres) -> Iterator[str]:
    yield from _database(server, upto=LAST.version)


@pytest.fixture
def behind(server: EmbeddedPostgres) -> Iterator[str]:
    yield from _database(server, upto=LAST.version - 1)


@pytest.fixture
def empty(server: EmbeddedPostgres) -> Iterator[str]:
    yield from _database(server, upto=None)


def _as(owner: str, user: str) -> str:
    return make_conninfo(owner, user=user)


def _schema(owner: str) -> list[tuple[object, ...]]:
    """What a migrator would change: the jobs schema's tables and the recorded migrations."""
    with psycopg.connect(owner) as conn:
        tables = conn.execute("select tablename from pg_tables where schemaname = 'jobs' order by 1").fetchall()
        recorded = conn.execute("select version from jobs.migration order by 1").fetchall() if tables else []
    return [*tables, *recorded]


@pytest.mark.parametrize("command", ["migrate", "install"])
@pytest.mark.parametrize("user", ["shop", "oncall"])
def test_a_login_that_owns_nothing_is_told_nothing_to_apply_on_an_up_to_date_database(
    current: str, command: str, user: str
) -> None:
    before = _schema(current)
    out = runner.invoke(app, [command, "--dsn", _as(current, user)])
    assert out.exit_code == 0, out.output
    assert out.output.splitlines()[-1].startswith("nothing to apply: the jobs schema in ")
    as_json = runner.invoke(app, [command, "--json", "--dsn", _as(current, user)])
    assert as_json.exit_code == 0 and json.loads(as_json.stdout)["applied"] == []
    assert _schema(current) == before


@pytest.mark.parametrize("command", ["migrate", "install"])
def test_a_login_without_create_on_the_database_is_refused_the_schema_as_x_permission_denied(
    empty: str, command: str
) -> None:
    out = runner.invoke(app, [command, "--dsn", _as(empty, "shop")])
    assert out.exit_code == 1 and "Traceback" not in out.output
    assert "X_PERMISSION_DENIED" in out.stderr
    assert "role 'shop' may not create the jobs schema" in out.stderr
    assert "CREATE on database priv_" in out.stderr and "nothing was applied" in out.stderr
    assert "fix: jobsctl migrate --sql --dsn " in out.stderr and "> jobs-pending.sql" in out.stderr
    err = json.loads(runner.invoke(app, [command, "--json", "--dsn", _as(empty, "shop")]).stderr)["error"]
    assert err["code"] == "X_PERMISSION_DENIED" and err["fix"].endswith("> jobs-pending.sql")
    with psycopg.connect(empty) as conn:
        assert conn.execute("select to_regnamespace('jobs')").fetchone() == (None,)


def test_a_non_owner_with_a_migration_pending_is_refused_and_the_owner_runs_the_script_it_names(
    behind: str,
) -> None:
    before = _schema(behind)
    out = runner.invoke(app, ["migrate", "--dsn", _as(behind, "shop")])
    assert out.exit_code == 1 and "Traceback" not in out.output
    assert "X_PERMISSION_DENIED" in out.stderr
    assert f"role 'shop' may not apply the 1 pending migration(s) ({LAST.label})" in out.stderr
    with psycopg.connect(behind) as conn:  # the superuser that migrated it owns the schema
        owner = conn.info.user
    assert f"only role {owner!r}, the owner of the jobs schema, applies them" in out.stderr
    assert f"> jobs-pending.sql  # for role {owner} to run\n" in out.stderr  # the fix names who runs the script
    assert f"the schema stays at {LAST.version - 1:04d}" in out.stderr
    assert _schema(behind) == before
    # The fix: the non-owner prints the script, the owner (a DBA) runs it.
    script = runner.invoke(app, ["migrate", "--sql", "--dsn", _as(behind, "shop")])
    assert script.exit_code == 0 and f"-- {LAST.label}" in script.output
    with psycopg.connect(behind) as conn:
        conn.execute(script.output)
    again = runner.invoke(app, ["migrate", "--dsn", _as(behind, "shop")])
    assert again.exit_code == 0 and "nothing to apply" in again.output


def test_migrate_status_as_a_jobs_reader_reads_and_as_a_login_with_no_grant_is_x_permission_denied(
    behind: str,
) -> None:
    status = runner.invoke(app, ["migrate", "--status", "--json", "--dsn", _as(behind, "oncall")])
    assert status.exit_code == 0 and json.loads(status.stdout)["pending"] == [LAST.version]
    for args in (["migrate", "--status"], ["migrate", "--sql"], ["migrate"]):
        out = runner.invoke(app, [*args, "--dsn", _as(behind, "stranger")])
        assert out.exit_code == 1 and "Traceback" not in out.output, args
        assert "X_PERMISSION_DENIED" in out.stderr and "role 'stranger' may not read jobs.migration" in out.stderr
        assert "fix: GRANT jobs_reader TO stranger" in out.stderr, args
