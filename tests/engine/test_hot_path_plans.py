"""The hot path's plans where they go wrong in production: on a table whose statistics predate a
burst of enqueues (never analyzed, or analyzed while small), the claim must still read only what
it takes, and the ack must probe by id rather than read every running-row index entry the table
ever had. A lease renewal must be able to be a HOT update (no index names lease_until)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import psycopg

from engine.drivers.postgres.jobs import ack_fence
from engine.drivers.postgres.rows import CLAIM_FIELDS
from engine.drivers.sqlfiles import Q

BATCH = 200
RUN = CLAIM_FIELDS.index("run")


def _scans(plan: dict[str, Any]) -> list[tuple[str, str, float]]:
    """(node type, index name, actual rows) of every scan of jobs.job in an EXPLAIN ANALYZE plan."""
    out = []
    kind = plan.get("Node Type", "")
    on_job = plan.get("Relation Name") == "job" or plan.get("Index Name", "").startswith("job")
    if on_job and kind in ("Seq Scan", "Index Scan", "Index Only Scan", "Bitmap Index Scan"):
        out.append((kind, plan.get("Index Name", ""), float(plan["Actual Rows"])))
    for child in plan.get("Plans", []):
        out += _scans(child)
    return out


def _explain(conn: psycopg.Connection[Any], sql: str, params: dict[str, Any]) -> list[tuple[str, str, float]]:
    conn.execute("begin")
    try:
        doc = conn.execute("explain (analyze, format json) " + sql, params).fetchone()[0]  # type: ignore[index]
    finally:
        conn.execute("rollback")
    return _scans(doc[0]["Plan"])


def _backlog(conn: psycopg.Connection[Any], n: int, now: datetime) -> None:
    # A burst into a table the planner knows nothing about: no analyze after the insert.
    conn.execute(
        """insert into jobs.job
                 (id, name, queue, idempotency_key, input, state, max_attempts, run_at, created_at, updated_at)
           select gen_random_uuid(), 'bench.noop', 'bench', 'k' || i, jsonb_build_object('i', i), 'ready', 3,
                  %(now)s - interval '1 second', %(now)s, %(now)s
           from generate_series(1, %(n)s) as i""",
        {"n": n, "now": now},
    )


def _claim(conn: psycopg.Connection[Any], now: datetime) -> dict[str, Any]:
    return {"queues": ["bench"], "floors": [None], "limit": BATCH, "worker": "w1", "now": now, "lease_seconds": 30.0}


def test_the_claim_reads_no_more_of_a_fresh_backlog_than_it_takes(pg_dsn: str) -> None:
    now = datetime.now(UTC)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        _backlog(conn, 20_000, now)
        for mode in ("force_custom_plan", "force_generic_plan"):
            conn.execute(f"set plan_cache_mode = {mode}")
            scans = _explain(conn, Q.worker_claim.text, _claim(conn, now))
            picked = [s for s in scans if s[2] > 0 and s[1] != "job_pkey"]
            # One ordered walk of job_claim that stops at the batch: the job_next_due index this
            # replaced handed the planner all 20,000 rows to sort on every claim.
            assert picked and all(s[1] == "job_claim" and s[2] <= BATCH for s in picked), (mode, scans)


def _nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [plan] + [n for child in plan.get("Plans", []) for n in _nodes(child)]


def test_the_claim_updates_the_rows_it_locked_by_their_ctid_not_a_primary_key_probe_each(pg_dsn: str) -> None:
    # A locked row cannot move: the update reaches each one by its ctid (a TID scan), which cost
    # 3.5-6 us a row less backend CPU than a probe of job_pkey per id.
    now = datetime.now(UTC)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        _backlog(conn, 10 * BATCH, now)
        for mode in ("force_custom_plan", "force_generic_plan"):
            conn.execute(f"set plan_cache_mode = {mode}")
            conn.execute("begin")
            try:
                doc = conn.execute(
                    "explain (analyze, format json) " + Q.worker_claim.text, _claim(conn, now)
                ).fetchone()
            finally:
                conn.execute("rollback")
            assert doc is not None
            [update] = [n for n in _nodes(doc[0][0]["Plan"]) if n.get("Operation") == "Update"]
            reads = [n["Node Type"] for n in update["Plans"] if n.get("Parent Relationship") == "Outer"]
            assert reads == ["Tid Scan"] and update["Actual Rows"] == BATCH, (mode, reads, update["Actual Rows"])


def test_the_ack_probes_running_rows_by_id_however_many_ran_before(pg_dsn: str) -> None:
    now = datetime.now(UTC)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        _backlog(conn, 12 * BATCH, now)
        for _ in range(11):  # each cycle leaves BATCH dead running-row index entries behind
            rows = conn.execute(Q.worker_claim.text, _claim(conn, now)).fetchall()
            conn.execute(Q.job_ack_many.text, _ack(rows, now))
        rows = conn.execute(Q.worker_claim.text, _claim(conn, now)).fetchall()
        assert len([r for r in rows if r[0] is not None]) == BATCH
        scans = _explain(conn, Q.job_ack_many.text, _ack(rows, now))
    assert scans and all(rows_read <= BATCH for _, _, rows_read in scans), scans


def _ack(rows: list[tuple[Any, ...]], now: datetime) -> dict[str, Any]:
    rows = [r for r in rows if r[0] is not None]  # worker_claim's last row says when work is next due
    return {
        "ids": "{" + ",".join(r[0] for r in rows) + "}",
        "worker": "w1",
        "fence": ack_fence([r[0] for r in rows], [r[RUN] for r in rows], ["null"] * len(rows)),
        "now": now,
    }


def test_no_index_names_lease_until_so_a_renewal_can_be_a_hot_update(pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn) as conn:
        rows = conn.execute(
            """select i.indexrelid::regclass::text,
                      pg_get_indexdef(i.indexrelid) || coalesce(pg_get_expr(i.indpred, i.indrelid), '')
               from pg_index i where i.indrelid = 'jobs.job'::regclass"""
        ).fetchall()
    assert rows and [name for name, d in rows if "lease_until" in d] == []


def test_the_live_table_holds_no_settled_rows_list_index_and_the_ack_writes_none_of_its(pg_dsn: str) -> None:
    # 0010_settled_rows: an enqueue writes jobs.job's indexes only; the settled rows' lists are
    # jobs.job_done's (its open bucket's), written by the ack that moves a row there.
    now = datetime.now(UTC)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        live = {
            r[0]
            for r in conn.execute(
                "select indexrelid::regclass::text from pg_index where indrelid = 'jobs.job'::regclass"
            )
        }
        assert {"job_list_state", "job_list_name", "job_dead_v5", "job_dead_code"}.isdisjoint(live), live
        _backlog(conn, BATCH, now)
        rows = conn.execute(Q.worker_claim.text, _claim(conn, now)).fetchall()
        acked = conn.execute(Q.job_ack_many.text, _ack(rows, now)).fetchall()
        assert len(acked) == BATCH
        where = conn.execute("select tableoid::regclass::text, state, count(*) from jobs.job group by 1, 2").fetchall()
    assert where == [("jobs.job_done_now", "completed", BATCH)]  # the open bucket (0012_settled_buckets)


def _claim_entries_read(conn: psycopg.Connection[Any], params: dict[str, Any], dsn: str) -> int:
    """job_claim index entries one claim reads (pg_stat_user_indexes.idx_tup_read: dead ones too),
    the claim rolled back."""
    reads = "select idx_tup_read, idx_scan from pg_stat_user_indexes where indexrelname = 'job_claim'"
    with psycopg.connect(dsn, autocommit=True) as obs:
        before = obs.execute(reads).fetchone()
        conn.execute("begin")
        conn.execute(Q.worker_claim.text, params).fetchall()
        conn.execute("rollback")
        conn.execute("select pg_stat_force_next_flush()")  # this backend's counters, reported at once
        for _ in range(200):  # the report lands as the backend goes idle: a moment at most
            after = obs.execute(reads).fetchone()
            if after is not None and before is not None and after[1] > before[1]:
                return int(after[0] - before[0])
            time.sleep(0.01)
    raise AssertionError("the claim's index statistics were never reported")


def test_under_a_long_snapshot_a_claim_from_its_floor_steps_over_none_of_the_rows_claimed_before(
    pg_dsn: str,
) -> None:
    # A session idle in transaction holds the xmin horizon: the row versions every claim leaves
    # behind stay, and so do their job_claim entries, which a claim from the head of the queue
    # reads one by one (a heap visit each). From the worker's floor (engine/runtime/floors.py) it
    # reads only the rows it takes.
    now = datetime.now(UTC)
    with psycopg.connect(pg_dsn, autocommit=True) as conn, psycopg.connect(pg_dsn) as holder:
        holder.execute("select txid_current()")
        conn.execute(
            """insert into jobs.job
                     (id, name, queue, idempotency_key, input, state, max_attempts, run_at, created_at, updated_at)
               select gen_random_uuid(), 'bench.noop', 'bench', 'k' || i, '{}', 'ready', 3,
                      %(now)s - interval '1 hour' + i * interval '1 millisecond', %(now)s, %(now)s
               from generate_series(1, 5000) as i""",
            {"now": now},
        )
        floor = None
        for _ in range(5000 // BATCH):
            rows = [r for r in conn.execute(Q.worker_claim.text, _claim(conn, now)).fetchall() if r[0] is not None]
            conn.execute(Q.job_ack_many.text, _ack(rows, now))
            floor = max(r[CLAIM_FIELDS.index("run_at")] for r in rows)
        _backlog(conn, BATCH, now)  # the next jobs, due after every claimed one
        full = _claim_entries_read(conn, _claim(conn, now), pg_dsn)
        floored = _claim_entries_read(conn, _claim(conn, now) | {"floors": [floor]}, pg_dsn)
        holder.rollback()
    assert full >= 5000 and floored <= 2 * BATCH, (full, floored)


def test_an_enqueued_ready_row_enters_five_indexes_of_the_live_table(pg_dsn: str) -> None:
    # Every index an enqueue writes is server time on the hot path (python -m bench.indexcost):
    # 0011_live_indexes folded the console's live lists into the dedupe index and one
    # (queue, state, id) index. A row is in an index when it matches the index's predicate.
    now = datetime.now(UTC)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        _backlog(conn, 1, now)
        preds = conn.execute(
            """select i.indexrelid::regclass::text, coalesce(pg_get_expr(i.indpred, i.indrelid), 'true')
               from pg_index i where i.indrelid = 'jobs.job'::regclass"""
        ).fetchall()
        entered = {
            name
            for name, pred in preds
            if conn.execute(f"select count(*) from only jobs.job where {pred}").fetchone() == (1,)  # noqa: S608
        }
    assert entered == {
        f"jobs.{n}" for n in ("job_pkey", "job_dedupe_live_v3", "job_claim", "job_live_queue_state", "job_live_input")
    }


async def test_the_claim_runs_its_generic_plan_from_its_first_call_so_a_replanning_never_makes_it_plan_each_call(
    pg_dsn: str,
) -> None:
    # PostgreSQL's plan cache plans a prepared statement's first five calls with their values, then
    # keeps the generic plan unless a replanning (statistics changed) costs it above those: from then
    # on every claim was planned anew (~4x its run, seen 17 minutes into a held-depth run). The
    # claim is headed `generic`: its plan is the generic one from the first call.
    from engine.drivers.postgres import PostgresDriver

    now = datetime.now(UTC)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        _backlog(conn, 8 * 4, now)
    driver = PostgresDriver(pg_dsn)
    await driver.open()
    try:
        for _ in range(8):
            got = await driver.worker_claim(queues=["bench"], limit=4, worker="w1", now=now, lease_seconds=30.0)
            assert len(got.jobs) == 4
        async with driver.pools.connection() as conn:  # the loop's lead connection, the claims' own
            plans = await (
                await conn.execute(
                    "select generic_plans, custom_plans from pg_prepared_statements where statement like %s",
                    ["%with picked as%"],
                )
            ).fetchall()
            mode = await (await conn.execute("show plan_cache_mode")).fetchone()
    finally:
        await driver.close()
    assert plans == [{"generic_plans": 8, "custom_plans": 0}]
    assert mode == {"plan_cache_mode": "auto"}  # the setting lasted the claim's transaction only


async def test_a_statement_headed_generic_runs_under_force_generic_plan_on_every_path_and_only_it(
    pg_dsn: str,
) -> None:
    from engine.drivers.postgres import PostgresDriver
    from engine.drivers.sqlfiles import Query

    text = "select current_setting('plan_cache_mode') as mode, %(x)s::int as x"
    generic, plain = Query("t_generic", "one", "", text, "test", True), Query("t_plain", "one", "", text, "test")
    driver = PostgresDriver(pg_dsn)
    await driver.open()
    try:
        assert await driver._row(generic, {"x": 1}) == {"mode": "force_generic_plan", "x": 1}
        assert await driver._raw(generic, {"x": 2}) == ("force_generic_plan", 2)
        assert await driver._pipelined(generic, [{"x": 3}, {"x": 4}]) == [
            {"mode": "force_generic_plan", "x": 3},
            {"mode": "force_generic_plan", "x": 4},
        ]
        assert await driver._row(plain, {"x": 5}) == {"mode": "auto", "x": 5}
        assert await driver._raw(plain, {"x": 6}) == ("auto", 6)
    finally:
        await driver.close()
