"""What the schema tests share (a plugin of tests/conftest.py): empty databases to migrate, a
driver opened on one, ids, and a login that does not own the schema."""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import AsyncIterator, Callable, Iterator

import psycopg
import pytest

from engine.clock import FakeClock
from engine.drivers.postgres import PostgresDriver
from engine.testing.embedded_pg import create_database, drop_database

_n = itertools.count(1)


@pytest.fixture
def empty_db(pg_server: str) -> Iterator[Callable[[], str]]:
    """Makes empty databases (no schema) on the test server, dropped after the test."""
    made: list[str] = []

    def make() -> str:
        name = f"mig_{os.getpid()}_{next(_n)}"
        made.append(name)
        return create_database(pg_server, name)

    yield make
    for name in made:
        drop_database(pg_server, name)


@pytest.fixture
async def pg(pg_dsn: str) -> AsyncIterator[PostgresDriver]:
    """A driver opened on this test's database."""
    async with opened(pg_dsn) as d:
        yield d


@pytest.fixture
def bucket_opened_now(pg_dsn: str, clock: FakeClock) -> None:
    """The open bucket of settled rows opened at the test clock's now (the migration stamped the
    server's), for tests that seal and drop buckets on the fake clock."""
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("update jobs.job_done_bucket set opened_at = %s", (clock.now(),))


@contextlib.asynccontextmanager
async def opened(dsn: str) -> AsyncIterator[PostgresDriver]:
    driver = PostgresDriver(dsn)
    await driver.open()
    try:
        yield driver
    finally:
        await driver.close()


def job_uuid(i: int) -> str:
    """A fixed UUIDv7-shaped id, ordered by ``i``."""
    return f"0190c0de-0000-7000-8000-{i:012d}"


@contextlib.contextmanager
def database_role(dsn: str, prefix: str, *grants: str) -> Iterator[str]:
    """A login named for this test's database (roles are the cluster's), granted ``grants`` (each
    naming it as {role}); yields its DSN and drops it, with what it owns, afterwards."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("select current_database()").fetchone()
        assert row is not None
        role = f"{prefix}_{row[0]}"
        conn.execute(f'create role "{role}" login')
        for grant in grants:
            conn.execute(grant.format(role=f'"{role}"'))
    try:
        yield psycopg.conninfo.make_conninfo(dsn, user=role)
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'drop owned by "{role}"')
            conn.execute(f'drop role "{role}"')


@pytest.fixture
def writer_dsn(pg_dsn: str) -> Iterator[str]:
    """A login granted jobs_writer-like rights on this test's database (what sql/roles/roles.sql
    grants), which does not own the schema."""
    with database_role(
        pg_dsn,
        "writer",
        "grant usage on schema jobs to {role}",
        "grant select, insert, update, delete on all tables in schema jobs to {role}",
        "grant usage on all sequences in schema jobs to {role}",
    ) as dsn:
        yield dsn
