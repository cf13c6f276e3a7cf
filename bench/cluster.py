"""The bench's throwaway cluster: one server per invocation, one fresh database per run.

Every database is cloned from one template holding all three schemas (ours, pgqueuer's, the
raw-SQL limit's), so each measured run starts from empty, unbloated tables.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import psycopg
from psycopg import conninfo as ci
from psycopg import sql as pgsql

from bench.sqlq import sql
from engine.schema import install_schema, migrate
from engine.testing import EmbeddedPostgres, create_database, drop_database

TEMPLATE = "bench_template"
# `python -m bench --durable`: PostgreSQL's defaults, where every commit flushes the WAL (the
# default regime turns the three off, the same for every system).
DURABLE = {"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on"}
# ... on a disk: the default cluster lives in /dev/shm (tmpfs), where an fsync costs nothing and
# "durable" would measure no flush at all.
DURABLE_DIR = "/var/tmp"
# The cost suite's counters (bench/costs.py); utility statements (BEGIN, COMMIT, SET, LISTEN) are
# not counted as statements: commits are counted apart.
STATS = {"shared_preload_libraries": "pg_stat_statements", "pg_stat_statements.track_utility": "off"}


def installed_database(admin: str, name: str) -> str:
    """A fresh database ``name`` on the server ``admin`` reaches, with our schema installed (any
    database of that name from an earlier run dropped first)."""
    drop_database(admin, name)
    dsn = create_database(admin, name)
    install_schema(dsn)
    return dsn


def asyncpg_kwargs(dsn: str) -> dict[str, Any]:
    """asyncpg takes keywords, not a libpq conninfo (the cluster listens on a Unix socket)."""
    parts = ci.conninfo_to_dict(dsn)
    return {
        "host": parts["host"],
        "port": int(parts.get("port") or 5432),
        "user": parts.get("user"),
        "database": parts.get("dbname"),
    }


async def _install_pgqueuer(dsn: str) -> None:
    import asyncpg
    from pgqueuer.db import AsyncpgDriver
    from pgqueuer.queries import Queries

    conn = await asyncpg.connect(**asyncpg_kwargs(dsn))
    try:
        await Queries(AsyncpgDriver(conn)).install()
    finally:
        await conn.close()


class BenchCluster:
    def __init__(self, *, durable: bool = False, stats: bool = False) -> None:
        settings = (DURABLE if durable else {}) | (STATS if stats else {})
        self.pg = EmbeddedPostgres(max_connections=200, settings=settings, base_dir=DURABLE_DIR if durable else None)
        self.stats = stats
        self.admin = ""
        self._numbers = itertools.count(1)
        self._live: list[str] = []

    def start(self) -> None:
        self.admin = self.pg.start()
        if self.stats:
            with psycopg.connect(self.admin, autocommit=True) as conn:
                conn.execute(sql("costs_install"))  # type: ignore[arg-type]
        drop_database(self.admin, TEMPLATE)
        dsn = create_database(self.admin, TEMPLATE)
        install_schema(dsn)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql("raw_install"))  # type: ignore[arg-type]
        asyncio.run(_install_pgqueuer(dsn))
        with psycopg.connect(self.admin, autocommit=True) as conn:
            conn.execute(pgsql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS false").format(pgsql.Identifier(TEMPLATE)))
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [TEMPLATE])

    def fresh(self) -> str:
        """A new empty database (the previous one is dropped: only one lives at a time)."""
        self.drop_all()
        name = f"b_{next(self._numbers)}"
        dsn = create_database(self.admin, name, TEMPLATE)
        self._live.append(name)
        return dsn

    def fresh_at(self, target: int) -> str:
        """A new empty database at migration ``target`` (not the template's last one)."""
        self.drop_all()
        name = f"b_{next(self._numbers)}_at_{target}"
        dsn = create_database(self.admin, name)
        self._live.append(name)
        migrate(dsn, target=target)
        return dsn

    def drop_all(self) -> None:
        while self._live:
            drop_database(self.admin, self._live.pop())

    def server_version(self) -> str:
        with psycopg.connect(self.admin) as conn:
            row = conn.execute("show server_version").fetchone()
        return str(row[0]) if row else "?"

    def close(self) -> None:
        self.drop_all()
        self.pg.close()
