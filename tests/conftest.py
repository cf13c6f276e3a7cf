"""Shared fixtures: the fake clock, a seeded id factory, and a `driver` over memory and postgres.

The Postgres half runs on a real throwaway cluster the suite starts itself (tests/pg_fixtures.py).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator

import pytest

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.testing import Databases

pytest_plugins = ["tests.pg_fixtures", "tests.engine.upgrades"]

# Snapshots are rendered with colour; NO_COLOR in the caller's environment would change them.
os.environ.pop("NO_COLOR", None)
# The CLI sizes its tables to $COLUMNS when set (a terminal's width); pytest-xdist's workers set it
# to 80. The tests that need a width give it (CliRunner's env=).
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)


def pytest_configure(config: pytest.Config) -> None:
    # Under xdist each process sees only its own tests, so an update could not tell which
    # snapshots are unused: updating runs in one process.
    if config.getoption("--snapshot-update", default=False) and config.getoption("numprocesses", default=None):
        raise pytest.UsageError("--snapshot-update runs in one process: add -n 0")


@pytest.fixture(autouse=True)
def _restore_jobs_logger() -> Iterator[None]:
    """`jobsctl worker` and the demo configure the `jobs` logger (and psycopg's) for a process (JSON
    lines, no propagation); run in-process by a test, that would hide every later test's log events."""
    import logging

    loggers = [logging.getLogger(name) for name in ("jobs", "psycopg", "psycopg_pool")]
    saved = [(list(log.handlers), log.level, log.propagate, log.disabled) for log in loggers]
    yield
    for log, (handlers, level, propagate, disabled) in zip(loggers, saved):
        log.handlers[:], log.level, log.propagate, log.disabled = handlers, level, propagate, disabled


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def ids(clock: FakeClock) -> IdFactory:
    return IdFactory(clock, seed=7)


@pytest.fixture(params=["memory", "postgres"])
async def driver(request: pytest.FixtureRequest) -> AsyncIterator[Driver]:
    """The same behaviour suite runs against every driver (STYLE.md, convention 3)."""
    d: Driver
    if request.param == "memory":
        from engine.drivers.memory import MemoryDriver

        d = MemoryDriver()
    else:
        from engine.drivers.postgres import PostgresDriver

        d = PostgresDriver(request.getfixturevalue("pg_dsn"))
    await d.open()
    try:
        yield d
    finally:
        await d.close()


@pytest.fixture
def pg_server_empty_dsn(pg_databases: Databases) -> Iterator[str]:
    """A fresh database with NO schema installed (for the 'jobsctl migrate' errors)."""
    dsn = pg_databases.empty()
    yield dsn
    pg_databases.drop(dsn)
