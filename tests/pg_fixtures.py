"""PostgreSQL for the test suite: one server per session, one fresh database per test.

- `pg_server` (session): the admin conninfo of a server where we may CREATE DATABASE. With
  `JOBS_TEST_DSN` set, that server; otherwise a private `EmbeddedPostgres` started once.
- `pg_databases` (session): `engine.testing.Databases` on that server: `jobs_template` holds the
  schema, closed to connections so that nothing can write to it or block a clone.
- `pg_dsn` (function): the conninfo of a fresh clone of the template, dropped afterwards.
- `pg_cluster` (function): the session's `EmbeddedPostgres`, for tests that `restart()` it. It
  is the one session cluster, so a test that stops it gets it started again after it ends.

A server that cannot start FAILS every test that needs it, with the cause and the fix: a skipped
database suite looks green while testing nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import NoReturn

import psycopg
import pytest

from engine.errors import X_DB_UNREACHABLE, X_EMBEDDED_PG, JobsError
from engine.testing import Databases, EmbeddedPostgres


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
def pg_databases(pg_server: str) -> Iterator[Databases]:
    dbs = Databases(pg_server).prepare()
    yield dbs
    dbs.close()


@pytest.fixture
def pg_dsn(pg_databases: Databases, _pg_embedded: EmbeddedPostgres | None) -> Iterator[str]:
    dsn = pg_databases.create()
    yield dsn
    if _pg_embedded is not None and not _pg_embedded.running:
        _pg_embedded.start()  # the test stopped the cluster (pg_cluster) and tore down first
    pg_databases.drop(dsn)


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
