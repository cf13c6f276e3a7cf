"""What the migration tests share (a plugin of tests/conftest.py): empty databases to migrate,
a driver opened on one, ids."""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import AsyncIterator, Callable, Iterator

import pytest

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
