"""Fresh databases holding the jobs schema, one per test, cloned from one template in milliseconds.

The schema is installed once, into a template database closed to connections; every test then
gets ``CREATE DATABASE … TEMPLATE`` of it (22 ms on tmpfs) and drops it afterwards, so no test sees
another's rows and none pays for an install.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Iterator
from typing import Any

import psycopg
from psycopg import errors, sql
from psycopg.conninfo import conninfo_to_dict

from engine.drivers.sqlfiles import Q
from engine.testing.embedded_pg import EmbeddedPostgres, create_database, drop_database

TEMPLATE = "jobs_template"


def install(dsn: str) -> None:
    """Bring ``dsn`` to the current schema: the one place the testing tools and the demo do it."""
    from engine.schema import migrate

    migrate(dsn)


class Databases:
    """On a server where we may CREATE DATABASE: a template with the schema, and fresh clones of it.

    ``prepare()`` (re)creates the template; ``create()`` returns the conninfo of a new clone,
    ``drop(dsn)`` removes it; ``database()`` is both as a context manager; ``close()`` drops the
    template. Names carry the process id, so two runs on one shared server never collide.
    """

    def __init__(self, admin_conninfo: str, *, template: str = TEMPLATE, prefix: str = "t") -> None:
        self.admin = admin_conninfo
        self.template = template
        self._prefix = f"{prefix}_{os.getpid()}"
        self._numbers = itertools.count(1)

    def prepare(self) -> Databases:
        drop_database(self.admin, self.template)  # left behind by an interrupted run on a shared server
        install(create_database(self.admin, self.template))
        with psycopg.connect(self.admin, autocommit=True) as conn:
            # Closed to connections: CREATE DATABASE ... TEMPLATE fails while anyone is connected.
            conn.execute(sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS false").format(sql.Identifier(self.template)))
            conn.execute(Q.database_sessions_end.text, {"name": self.template})  # type: ignore[arg-type]
        return self

    def create(self) -> str:
        name = f"{self._prefix}_{next(self._numbers)}"
        try:
            return create_database(self.admin, name, template=self.template)
        except errors.DuplicateDatabase:  # left behind by an interrupted run on a shared server
            drop_database(self.admin, name)
            return create_database(self.admin, name, template=self.template)

    def empty(self) -> str:
        """A new database with NO schema (for testing what happens before an install)."""
        name = f"empty_{self._prefix}_{next(self._numbers)}"
        return create_database(self.admin, name)

    def drop(self, dsn: str) -> None:
        drop_database(self.admin, str(conninfo_to_dict(dsn)["dbname"]))

    @contextlib.contextmanager
    def database(self) -> Iterator[str]:
        dsn = self.create()
        try:
            yield dsn
        finally:
            self.drop(dsn)

    def close(self) -> None:
        drop_database(self.admin, self.template)


@contextlib.contextmanager
def throwaway_postgres(**server_options: Any) -> Iterator[Databases]:
    """A private PostgreSQL server with the template prepared; the server and its directory are
    gone when the block ends. ``server_options`` go to ``EmbeddedPostgres`` (max_connections, ...)."""
    with EmbeddedPostgres(**server_options) as server:
        yield Databases(server.conninfo()).prepare()


def app_connection(dsn: str) -> Any:
    """A psycopg connection of the application's own to ``dsn`` (never the engine's pool), as an
    application holds one for its tables: the demo's accounts, a test's own rows."""
    return psycopg.connect(dsn)
