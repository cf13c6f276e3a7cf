"""Installing the schema: sql/schema.sql whole, in one transaction, re-runnable (I3)."""

from __future__ import annotations

import psycopg

from engine.drivers.postgres.pool import check_dsn, unreachable
from engine.drivers.sqlfiles import schema_sql

# Raised when a query needs what an older install lacks: 2 added jobs.gauge_snapshot, jobs.throughput_minute
# and the throughput_rolled_until watermark; 3 added jobs.job.waiting_since (and job_waiting_v2); 4 added
# jobs.worker's drain request columns; 5 the backfill ledger's columns.
SCHEMA_VERSION = 5
_INSTALL_LOCK = 7_201_100  # an advisory lock so two installers never interleave


def install_schema(dsn: str) -> None:
    conninfo = check_dsn(dsn)
    try:
        conn = psycopg.connect(conninfo)
    except psycopg.OperationalError as exc:
        raise unreachable(conninfo, exc) from None
    with conn:
        with conn.transaction():
            conn.execute("select pg_advisory_xact_lock(%s)", (_INSTALL_LOCK,))
            conn.execute(schema_sql())  # type: ignore[arg-type]
    conn.close()
