"""The demo application's accounts table and its two backfills.

A migration added two columns to the app's accounts; two backfills fill them:
``accounts_email_lower`` (declared for staging and production; it requires the migration that
added the column) and ``accounts_plan_tier`` (every environment; half a batch a second, so a pass
can be watched from the console).

One declaration (``declare``) serves both pictures of the demo, over either store:

- ``PostgresAccounts``: the real table ``demo_app.accounts`` in the demo's database, read by
  ``keyset`` on the app's own psycopg connection. Its SQL is in accounts.sql, loaded by name.
  ``backfills`` (module level) is this catalog, so ``jobsctl backfill --app console.demo.accounts``
  works against the demo's database with $JOBS_DSN set.
- ``MemoryAccounts``: for the memory driver (the seeded world of the snapshots and screenshots,
  ``jobs-console demo --memory``). The ledger and the passes are the engine's, in the memory
  driver; the rows a backfill sweeps are the application's, and an application without a database
  holds them in its process: an in-process table with a transaction per connection (updates are
  staged and land at commit, so a batch the pass rolls back leaves no trace, as on PostgreSQL).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine import JobsError
from engine.backfills import Backfills, Batch, Keyset
from engine.testing import app_connection

ROWS = 30_000
VERSION = "2.3.1"  # the demo application's version, recorded on each ledger row
PLANS = ("free", "team", "enterprise")
TIERS = {"free": 0, "team": 1, "enterprise": 2}
SOURCE_COLUMN = {"email_lower": "email", "plan_tier": "plan"}  # what each fill reads
MIGRATIONS = ("0001_accounts", "0002_accounts_email_lower", "0003_accounts_plan_tier")
_HEADER = re.compile(r"^--\s*name:\s*([a-z_]+)\s*$")


def statements(path: Path = Path(__file__).with_name("accounts.sql")) -> dict[str, str]:
    """accounts.sql by name: each ``-- name: x`` header's text up to the next, comments dropped."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        m = _HEADER.match(line.strip())
        if m:
            current = out.setdefault(m.group(1), [])
        elif current is not None and line.strip() and not line.strip().startswith("--"):
            current.append(line)
    return {name: "\n".join(lines).strip().rstrip(";") for name, lines in out.items()}


SQL = statements()


def _fill_value(column: str, source: str) -> Any:
    return source.lower() if column == "email_lower" else TIERS[source]


# --- on PostgreSQL ------------------------------------------------------------------------------


class PostgresAccounts:
    """``demo_app.accounts`` in the demo's database (``dsn``, else $JOBS_DSN when a pass runs)."""

    def __init__(self, dsn: str | None = None) -> None:
        self.dsn = dsn

    def connect(self) -> Any:
        dsn = self.dsn or os.environ.get("JOBS_DSN")
        if not dsn:
            raise JobsError(
                "X_INVALID_ARGUMENT",
                cause="the demo's accounts live in the demo's database, and no DSN names it",
                fix="JOBS_DSN='...the DSN jobs-console demo printed...' jobsctl backfill --app console.demo.accounts",
            )
        return app_connection(dsn)

    def create(self, rows: int = ROWS) -> None:
        """The table, its rows (no column filled yet) and the app's migration ledger."""
        with self.connect() as conn:
            conn.execute(SQL["accounts_create"])  # type: ignore[arg-type]
            conn.execute(SQL["accounts_seed"], {"rows": rows})  # type: ignore[arg-type]

    def source(self, column: str) -> Any:
        return Keyset("demo_app.accounts", "id", where=SQL[f"{column}_pending"], columns=[SOURCE_COLUMN[column]])

    def count(self, column: str) -> Callable[[Any], int]:
        def count(conn: Any) -> int:
            return int(conn.execute(SQL[f"{column}_count"]).fetchone()[0])

        return count

    def fill(self, conn: Any, column: str, rows: list[Any]) -> None:
        conn.execute(SQL[f"{column}_fill"], {"ids": [r["id"] for r in rows]})

    def migrations(self, conn: Any) -> set[str]:
        return {r[0] for r in conn.execute(SQL["migrations_applied"]).fetchall()}


# --- in the process -----------------------------------------------------------------------------


class MemoryAccounts:
    """The same table as plain lists, ids 1..rows; ``connect()`` opens a session (a transaction)."""

    def __init__(self, rows: int = ROWS) -> None:
        self.lock = threading.Lock()
        self.email = [f"User{i}@Example.COM" for i in range(1, rows + 1)]
        self.plan = [PLANS[i % 3] for i in range(1, rows + 1)]
        self.filled: dict[str, list[Any]] = {"email_lower": [None] * rows, "plan_tier": [None] * rows}
        self.applied = set(MIGRATIONS)

    def connect(self) -> _Session:
        return _Session(self)

    def read(self, column: str, after: int | None, size: int) -> list[dict[str, Any]]:
        source = self.email if column == "email_lower" else self.plan
        out: list[dict[str, Any]] = []
        with self.lock:
            values = self.filled[column]
            for i in range(after or 0, len(values)):  # id = index + 1: the rows after ``after``
                if values[i] is None:
                    out.append({"id": i + 1, SOURCE_COLUMN[column]: source[i]})
                    if len(out) == size:
                        break
        return out

    def source(self, column: str) -> Callable[[Any, Any, int], tuple[list[Any], Any]]:
        def read(conn: Any, after: Any, size: int) -> tuple[list[Any], Any]:
            rows = self.read(column, after, size)
            return rows, rows[-1]["id"] if rows else after

        return read

    def count(self, column: str) -> Callable[[Any], int]:
        def count(conn: Any) -> int:
            with self.lock:
                return sum(v is None for v in self.filled[column])

        return count

    def fill(self, conn: _Session, column: str, rows: list[Any]) -> None:
        conn.staged.extend((column, r["id"], _fill_value(column, r[SOURCE_COLUMN[column]])) for r in rows)

    def migrations(self, conn: Any) -> set[str]:
        return set(self.applied)


class _Session:
    def __init__(self, table: MemoryAccounts) -> None:
        self.table = table
        self.staged: list[tuple[str, int, Any]] = []

    def commit(self) -> None:
        with self.table.lock:
            for column, key, value in self.staged:
                self.table.filled[column][key - 1] = value
        self.staged.clear()

    def rollback(self) -> None:
        self.staged.clear()

    def close(self) -> None:
        self.staged.clear()


# --- the declarations ---------------------------------------------------------------------------


def declare(store: Any, *, version: str = VERSION) -> Backfills:
    """The app's two backfills over ``store`` (PostgresAccounts or MemoryAccounts)."""
    # Their passes run on the app's accounts queue, which the second app worker serves.
    bf = Backfills(connect=store.connect, migrations=store.migrations, version=version, queue="accounts")

    @bf.backfill(
        "accounts_email_lower",
        source=store.source("email_lower"),
        count=store.count("email_lower"),
        batch_size=500,
        rate=2,
        environments=["staging", "production"],
        requires="0002_accounts_email_lower",
    )
    def accounts_email_lower(batch: Batch) -> None:
        store.fill(batch.conn, "email_lower", batch.rows)

    @bf.backfill(
        "accounts_plan_tier",
        source=store.source("plan_tier"),
        count=store.count("plan_tier"),
        batch_size=200,
        rate=0.5,
    )
    def accounts_plan_tier(batch: Batch) -> None:
        store.fill(batch.conn, "plan_tier", batch.rows)

    return bf


# The module's own catalog, on PostgreSQL: its handles at module level, where `jobsctl worker` and
# `jobsctl backfill --app console.demo.accounts` look for them.
postgres = PostgresAccounts()
backfills = declare(postgres)
accounts_email_lower = backfills.get("accounts_email_lower")
accounts_plan_tier = backfills.get("accounts_plan_tier")
