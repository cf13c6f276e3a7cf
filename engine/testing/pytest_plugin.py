"""pytest fixtures for an application's tests of its handlers. Opt in from a conftest.py:

    pytest_plugins = ["engine.testing.pytest_plugin"]

- ``jobs_databases`` (session): a throwaway PostgreSQL with the schema in a template
  (throwaway_postgres); one per pytest-xdist worker process.
- ``jobs_dsn``: a fresh database cloned from that template, dropped after the test.
- ``jobs_engine``: ``connect(jobs_dsn)``, closed after the test; for sync and async tests alike.

Override ``jobs_databases`` in the conftest to test against a server you already run
(``Databases(conninfo).prepare()``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engine.api import Engine, connect
from engine.testing.databases import Databases, throwaway_postgres


@pytest.fixture(scope="session")
def jobs_databases() -> Iterator[Databases]:
    with throwaway_postgres() as dbs:  # gone at the end, even after a crash
        yield dbs


@pytest.fixture
def jobs_dsn(jobs_databases: Databases) -> Iterator[str]:
    with jobs_databases.database() as dsn:
        yield dsn


@pytest.fixture
def jobs_engine(jobs_dsn: str) -> Iterator[Engine]:
    eng = connect(jobs_dsn)
    try:
        yield eng
    finally:
        eng.close()
