"""How many connections a worker process holds on real PostgreSQL, against the budget README.md
gives ("Dependencies, and why"): its pool (pool_size), the loop's lead connection and three of its
own (LISTEN for new jobs, LISTEN for committed outbox stages, the presence lock). The one more a
maintenance leader opens while it vacuums a table, rebuilds an index or seals a bucket is the
upkeep connection of engine/drivers/postgres/maintenance.py, run by the upkeep tests."""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg

from engine.api import Enqueue, connect
from engine.drivers.postgres import PostgresDriver
from engine.jobs import job
from engine.runtime.execute import Execution
from engine.services.maintenance import MaintenanceConfig, maintained_worker

Q = "conns"
POOL = 2
JOBS = 300
OWN = 1 + 3  # the loop's lead connection; LISTEN for new jobs and for the outbox, the presence lock
SEEN: dict[str, Any] = {}


@job(name="conns.count", queue=Q, idempotency_key=lambda inp: str(inp["n"]))
async def count_connections(ctx, inp):  # type: ignore[no-untyped-def]
    """Each run reads how many sessions the database has besides the test's own reader."""
    cur = await SEEN["admin"].execute(
        "select pid, query from pg_stat_activity"
        " where datname = current_database() and backend_type = 'client backend' and pid <> pg_backend_pid()"
    )
    rows = await cur.fetchall()
    SEEN["counts"].append(len(rows))
    SEEN["queries"].update(q for _, q in rows)
    return len(rows)


async def test_a_maintained_worker_holds_no_more_connections_than_its_documented_budget(pg_dsn: str) -> None:
    admin = await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True)
    SEEN.update(admin=admin, counts=[], queries=set())
    eng = connect(pg_dsn)
    await eng.aenqueue_many([Enqueue(count_connections, {"n": n}) for n in range(JOBS)])
    await eng.aclose()
    done = asyncio.Event()
    completed: list[Execution] = []

    def settled(ex: Execution) -> None:
        completed.append(ex)
        if len(completed) == JOBS:
            done.set()

    driver = PostgresDriver(pg_dsn, pool_size=POOL)
    # Every part that holds a connection of its own, on: LISTEN for new jobs, the presence lock,
    # the relay's LISTEN (relay=True by default), the maintenance leader (its passes use the pool).
    cfg = MaintenanceConfig(interval=0.05)
    w = maintained_worker(
        driver, [count_connections], queues=[Q], concurrency=50, maintenance_config=cfg, on_execution=settled
    )
    try:
        async with w:
            await asyncio.wait_for(done.wait(), 30)
    finally:
        await driver.close()
        await admin.close()
    assert [ex.outcome for ex in completed] == ["completed"] * JOBS
    listens = {q.strip().lower() for q in SEEN["queries"] if q.strip().lower().startswith("listen")}
    assert listens == {"listen jobs_enqueue", "listen jobs_outbox"}  # each held while jobs ran
    # The pool opens on demand up to its size; the lead and the worker's own three are always held.
    assert OWN + 1 <= max(SEEN["counts"]) <= OWN + POOL
