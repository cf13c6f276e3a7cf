"""PostgreSQL for the test suite: one server per session, one fresh database per test.

- `pg_server` (session): the admin conninfo of a server where we may CREATE DATABASE. With
  `JOBS_TEST_DSN` set, that server; otherwise a private `EmbeddedPostgres` started once.
- `pg_template` (session): the name of `jobs_template`, a database with every migration applied,
  closed to connections so that nothing can write to it or block a clone.
- `pg_dsn` (function): the conninfo of `t_<n>`, cloned from the template, dropped afterwards.
- `pg_cluster` (function): the session's `EmbeddedPostgres`, for tests that `restart()` it. It
  is the one session cluster, so a test that stops it gets it started again after it ends.

A server that cannot start FAILS every test that needs it, with the cause and the fix: a skipped
database suite looks green while testing nothing.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from typing import NoReturn

import psycopg
import pytest
from psycopg import errors, sql

from engine.embedded_pg import EmbeddedPostgres, create_database, drop_database
from engine.errors import X_DB_UNREACHABLE, X_EMBEDDED_PG, JobsError

TEMPLATE = "jobs_template"
_numbers = itertools.count(1)


def _fail(err: JobsError) -> NoReturn:
    # `from None`: the message says it all, without "During handling of the above exception".
    raise pytest.fail.Exception(err.render(), pytrace=False) from None


@pytest.fixture(scope="session")
def _pg_embedded() -> Iterator[EmbeddedPostgres | None]:
    if os.environ.get("JOBS_TEST_DSN"):
        yield None
        return
    cluster = EmbeddedPostgres()
    try:
        cluster.start()
    except JobsError as err:
        cluster.close()
        _fail(err)  # pytest caches a session fixture's failure: no restart attempt per test
    yield cluster
    cluster.close()


@pytest.fixture(scope="session")
def pg_server(_pg_embedded: EmbeddedPostgres | None) -> str:
    if _pg_embedded is not None:
        return _pg_embedded.conninfo()
    dsn = os.environ["JOBS_TEST_DSN"]
    try:
        psycopg.connect(dsn, connect_timeout=10).close()
    except psycopg.Error as exc:  # the message names host and user, never the DSN's password
        _fail(JobsError(X_DB_UNREACHABLE, cause=f"JOBS_TEST_DSN: {exc}".strip(), fix="unset JOBS_TEST_DSN"))
    return dsn


@pytest.fixture(scope="session")
def pg_template(pg_server: str) -> Iterator[str]:
    from engine.schema import migrate  # imported here: only database tests need it

    drop_database(pg_server, TEMPLATE)  # left behind by an interrupted run on a shared server
    migrate(create_database(pg_server, TEMPLATE))
    with psycopg.connect(pg_server, autocommit=True) as conn:
        # Closed to connections: CREATE DATABASE ... TEMPLATE fails while anyone is connected.
        conn.execute(sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS false").format(sql.Identifier(TEMPLATE)))
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [TEMPLATE])
    yield TEMPLATE
    drop_database(pg_server, TEMPLATE)


@pytest.fixture
def pg_dsn(pg_server: str, pg_template: str, _pg_embedded: EmbeddedPostgres | None) -> Iterator[str]:
    name = f"t_{next(_numbers)}"
    try:
        dsn = create_database(pg_server, name, template=pg_template)
    except errors.DuplicateDatabase:  # left behind by an interrupted run on a shared server
        drop_database(pg_server, name)
        dsn = create_database(pg_server, name, template=pg_template)
    yield dsn
    if _pg_embedded is not None and not _pg_embedded.running:
        _pg_embedded.start()  # the test stopped the cluster (pg_cluster) and tore down first
    drop_database(pg_server, name)


@pytest.fixture
def pg_cluster(_pg_embedded: EmbeddedPostgres | None) -> Iterator[EmbeddedPostgres]:
    if _pg_embedded is None:
        _fail(
            JobsError(
                X_EMBEDDED_PG,
                cause="this test restarts the server, and JOBS_TEST_DSN names one the suite does not own",
                fix="unset JOBS_TEST_DSN",
            )
        )
    yield _pg_embedded
    if not _pg_embedded.running:
        _pg_embedded.start()
