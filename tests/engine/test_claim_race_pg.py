"""The claim's update reaches the rows it locked by ctid (sql/queries/workers.sql). A row whose
version changed after the claim's snapshot and before its lock, and stayed claimable, is locked
at a version the update cannot see: that claim leaves it, names it as due now, and the next claim
takes it. Nothing is lost and nothing is claimed twice.

The race is made to happen: the claim is held inside its statement, after its snapshot, by a
row-level security policy on jobs.queue (read for the paused queues before any job row is
locked; a paused queue's row passes through it) that waits on an advisory lock this test holds,
while another session changes a row.
"""

from __future__ import annotations

import os
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from engine.drivers.sqlfiles import Q

GATE = 424242


def _claim(conn: psycopg.Connection[Any], now: datetime) -> list[tuple[Any, ...]]:
    params = {"queues": ["bench"], "floors": [None], "limit": 10, "worker": "w1", "now": now, "lease_seconds": 30.0}
    return conn.execute(Q.worker_claim.text, params).fetchall()


def test_a_row_changed_between_the_claims_snapshot_and_its_lock_comes_back_due_now_and_the_next_claim_takes_it(
    pg_dsn: str,
) -> None:
    now = datetime.now(UTC)
    role = f"claim_race_{os.getpid()}"
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(
            """insert into jobs.job
                     (id, name, queue, idempotency_key, input, state, max_attempts, run_at, created_at, updated_at)
               select gen_random_uuid(), 'bench.noop', 'bench', 'k' || i, '{}', 'ready', 3,
                      %(due)s + i * interval '1 millisecond', %(due)s, %(due)s
               from generate_series(1, 3) as i""",
            {"due": now - timedelta(seconds=10)},
        )
        first, changed, last = (str(r[0]) for r in admin.execute("select id from jobs.job order by run_at"))
        # The gate runs for paused queues' rows only (the planner tests `paused` first).
        admin.execute("insert into jobs.queue (name, paused) values ('elsewhere', true)")
        admin.execute(
            """create function jobs.race_gate() returns boolean language plpgsql as $$
               begin
                   perform pg_advisory_lock_shared(%s);
                   perform pg_advisory_unlock_shared(%s);
                   return true;
               end $$""".replace("%s", str(GATE))
        )
        admin.execute("alter table jobs.queue enable row level security")
        admin.execute("create policy race_gate on jobs.queue using (jobs.race_gate())")
        admin.execute(f"create role {role}")
        try:
            admin.execute(f"grant usage on schema jobs to {role}")
            admin.execute(f"grant select, update on all tables in schema jobs to {role}")
            admin.execute(f"grant execute on all functions in schema jobs to {role}")
            admin.execute("select pg_advisory_lock(%s)", (GATE,))
            got: dict[str, Any] = {}

            def claimant() -> None:
                try:
                    _claimant()
                except Exception as exc:  # reported by the main thread's asserts
                    got["error"] = repr(exc)

            def _claimant() -> None:
                with psycopg.connect(pg_dsn, autocommit=True) as conn:
                    conn.execute(f"set role {role}")  # row-level security binds this role, not a superuser
                    got["pid"] = conn.info.backend_pid
                    got["first"] = _claim(conn, now)
                    got["second"] = _claim(conn, now)

            t = threading.Thread(target=claimant)
            t.start()
            # The claim has its snapshot and waits at the gate.
            waiting = "select wait_event = 'advisory' from pg_stat_activity where pid = %s"
            while "pid" not in got or not (admin.execute(waiting, (got["pid"],)).fetchone() or (False,))[0]:
                assert t.is_alive(), got  # the claim must be at the gate, not past it or failed
                t.join(0.01)
            # Another session changes the middle row, which stays claimable (as an event's wake-up
            # moves a suspended job's run_at), and commits before the claim reaches it.
            admin.execute("update jobs.job set run_at = run_at - interval '1 millisecond' where id = %s", (changed,))
            admin.execute("select pg_advisory_unlock(%s)", (GATE,))
            t.join(30)
            assert not t.is_alive()
        finally:
            admin.execute("select pg_advisory_unlock_all()")
            admin.execute(f"drop owned by {role}")
            admin.execute(f"drop role {role}")
        taken = [r[0] for r in got["first"] if r[0] is not None]
        due = [r for r in got["first"] if r[0] is None]
        assert sorted(taken) == sorted([first, last])  # the changed row is locked, not taken
        assert len(due) == 1 and due[0][10] <= now  # ...and named as due now: the worker claims again
        assert [r[0] for r in got["second"] if r[0] is not None] == [changed]
        states: dict[str, str] = dict(admin.execute("select id::text, state from jobs.job").fetchall())
        assert states == {first: "running", changed: "running", last: "running"}
