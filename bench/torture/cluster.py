"""The torture run's PostgreSQL: a private cluster it may stop, restart and fill to its limit.

The engine's tables are installed by the superuser (the schema's owner), the group roles of
sql/roles/roles.sql are created, and the workers connect as `torture_app`, a login in
`jobs_writer` whose password is in their DSN (trust authentication ignores it; the logs must
never show it). The harness itself connects as the superuser: PostgreSQL keeps
`superuser_reserved_connections` for it, so it can still act and watch while the application's
sessions hold every other connection.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

from bench.torture.sqlq import sql
from engine.drivers.sqlfiles import sql_dir
from engine.testing import EmbeddedPostgres, create_database, install

PASSWORD = "pw-torture-5e1f-never-logged"
DATABASE = "torture"
MAX_CONNECTIONS = 80
RESERVED = 12  # the harness's: its engine's pool, the sampler, the fault injector


class TortureCluster:
    def __init__(self, base_dir: str | None = None) -> None:
        settings = {
            "superuser_reserved_connections": RESERVED,
            "log_min_messages": "warning",
            "autovacuum_naptime": "5s",  # the soak watches it keep the jobs table's dead tuples bounded
        }
        self.pg = EmbeddedPostgres(max_connections=MAX_CONNECTIONS, settings=settings, base_dir=base_dir)
        self.admin = ""  # the superuser, in the run's database
        self.app = ""  # the application's login, password included

    def start(self) -> None:
        server = self.pg.start()
        self.admin = create_database(server, DATABASE)
        install(self.admin)
        roles = (Path(sql_dir()) / "roles" / "roles.sql").read_text(encoding="utf-8")
        with psycopg.connect(self.admin, autocommit=True) as conn:
            conn.execute(roles)  # type: ignore[arg-type]
            with psycopg.ClientCursor(conn) as cur:
                cur.execute(sql("torture_role"), {"password": PASSWORD})  # type: ignore[arg-type]
            conn.execute(sql("torture_app_install"))  # type: ignore[arg-type]
            conn.execute(sql("torture_app_grant"))  # type: ignore[arg-type]
        self.app = make_conninfo(self.admin, user="torture_app", password=PASSWORD)

    @property
    def max_connections(self) -> int:
        return MAX_CONNECTIONS

    def stop(self) -> None:
        """A fast shutdown (every session ended, a checkpoint), keeping the data."""
        self.pg.stop("fast")

    def start_again(self) -> None:
        self.pg.start()

    def log_text(self) -> str:
        path = self.pg.directory / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def close(self) -> None:
        self.pg.close()
