"""The application module the backfill tests declare their sweeps in (and run `jobsctl worker` on).

Its database is $BACKFILL_APP_DSN: a table `accounts` the tests create (create_accounts), and
`app_migrations`, the app's own migration ledger. `BACKFILL_ANNOUNCE=1` makes each write batch
print `BATCH n` on stdout; `BACKFILL_HOLD_AT=n` then holds batch n after its write and before its
commit, so a test kills the worker at a known point; `BACKFILL_RATE` paces the sweep.
"""

from __future__ import annotations

import os
import time
from typing import Any

import psycopg

from engine.backfills import Backfills, Batch, keyset


def app_connection() -> psycopg.Connection[Any]:
    return psycopg.connect(os.environ["BACKFILL_APP_DSN"])


def applied(conn: Any) -> set[str]:
    return {r[0] for r in conn.execute("select name from app_migrations").fetchall()}


def create_accounts(dsn: str, rows: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "create table accounts (id bigint primary key, email text not null, email_lower text,"
            " hits int not null default 0)"
        )
        conn.execute(
            "insert into accounts (id, email) select g, 'User' || g || '@Example.COM' from generate_series(1, %s) g",
            [rows],
        )
        conn.execute("create table app_migrations (name text primary key)")
        conn.execute("insert into app_migrations values ('0001_accounts'), ('0002_email_lower')")


def _rate() -> float | None:
    value = os.environ.get("BACKFILL_RATE")
    return float(value) if value else None


def _unswept(conn: Any) -> int:
    return int(conn.execute("select count(*) from accounts where email_lower is null").fetchone()[0])


bf = Backfills(connect=app_connection, migrations=applied, version="1.4.2")


# In-process tests hook a batch here (it runs in the pass's thread, after the batch's write).
ON_BATCH: list[Any] = []


def _fill(batch: Batch) -> None:
    ids = [r["id"] for r in batch.rows]
    batch.conn.execute("update accounts set email_lower = lower(email), hits = hits + 1 where id = any(%s)", [ids])
    if os.environ.get("BACKFILL_ANNOUNCE") == "1":
        print(f"BATCH {batch.number}", flush=True)
        if os.environ.get("BACKFILL_HOLD_AT") == str(batch.number):
            time.sleep(60)  # the test kills this process here
    for hook in ON_BATCH:
        hook(batch)


@bf.backfill(
    "accounts_email_lower",
    source=keyset("accounts", "id", where="email_lower is null", columns=["email"]),
    count=_unswept,
    batch_size=1000,
    rate=_rate(),
    requires="0002_email_lower",
)
def accounts_email_lower(batch: Batch) -> None:
    _fill(batch)


# The sweep narrows (even ids only) where the count does not: a stalled pass.
@bf.backfill(
    "accounts_even_only",
    source=keyset("accounts", "id", where="email_lower is null and id %% 2 = 0"),
    count=_unswept,
    batch_size=5000,
)
def accounts_even_only(batch: Batch) -> None:
    _fill(batch)


@bf.backfill(
    "accounts_prod_only", source=keyset("accounts", "id"), count=_unswept, environments=["production", "staging"]
)
def accounts_prod_only(batch: Batch) -> None:
    _fill(batch)


@bf.backfill("accounts_future", source=keyset("accounts", "id"), count=_unswept, requires="0003_not_yet")
def accounts_future(batch: Batch) -> None:
    _fill(batch)
