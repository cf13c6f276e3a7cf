"""The dead letters counted per group (0017_dead_group_counts.sql): jobs.dead_group holds, for
each (name, queue, error code, stop reason, tenant), exactly what grouping the dead rows gives
(and the queue gauges' dead letters add up from it),
however they came (a nack, a writer role that does not own the schema, rows already there at the
upgrade) and went (a retry, a discard, a bulk retry, concurrent retries of a group's first and
last, a sealed bucket dropped with its young dead letters moved on); and the dead-letter view
read from it answers what the view that reads every dead row answers. On a real PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from engine.api import Engine
from engine.clock import FakeClock
from engine.drivers.migrations import migrations
from engine.drivers.postgres import PostgresDriver
from engine.ids import IdFactory
from engine.introspect import Introspector, make_filter
from engine.projections import JobFilter
from engine.schema import migrate
from engine.services.buckets import WIDTH
from engine.services.maintenance import Maintenance, MaintenanceConfig
from engine.testing.factory import Factory
from engine.types import JobRow, JobState
from tests.engine.upgrades import database_role, job_uuid, opened

COUNTS = next(m.version for m in migrations() if m.name == "dead_group_counts")
GROUP_COLUMNS = "name, queue, error_code, stop_reason, tenant"
EVERY_ROW = datetime(2000, 1, 1, tzinfo=UTC)  # a `since` every job matches: the view reads the rows


pytestmark = pytest.mark.usefixtures("bucket_opened_now")


def counted(dsn: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(
            f"select {GROUP_COLUMNS}, n, first_seen, last_seen from jobs.dead_group order by {GROUP_COLUMNS}"
        ).fetchall()


def grouped(dsn: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(
            f"select {GROUP_COLUMNS}, count(*), min(finished_at), max(finished_at) from jobs.job_done"
            f" where state = 'dead' group by {GROUP_COLUMNS} order by {GROUP_COLUMNS}"
        ).fetchall()


async def agree(dsn: str, pg: PostgresDriver, clock: FakeClock) -> int:
    """The counts equal the grouped rows, and the view from them equals the view from the rows
    under each filter the counts answer; answers how many dead letters there are."""
    assert counted(dsn) == grouped(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        per_queue = dict(
            conn.execute("select queue, count(*) from jobs.job where state = 'dead' group by 1").fetchall()
        )
    gauges = await pg.queue_gauges(now=clock.now())  # the dead letters gauge, per queue
    assert {g.queue: g.dead for g in gauges if g.dead} == per_queue
    intro = Introspector(pg, clock=clock)
    for f in (
        JobFilter(),
        make_filter(tenant="acme"),
        make_filter(queue="billing"),
        make_filter(error_code="X_DECLINED"),
    ):
        fast = await intro.dead_letters(f)
        slow = await intro.dead_letters(JobFilter(**{**f.__dict__, "since": EVERY_ROW}))
        assert fast.groups == slow.groups and fast.total == slow.total
    return sum(r[5] for r in counted(dsn))


async def dead(f: Factory, name: str, code: str | None, *, tenant: str | None = None, queue: str = "billing") -> JobRow:
    """A job of ``name`` dead now with ``code`` (terminal when it has one, else out of attempts)."""
    row = await f.job(JobState.READY, name=name, queue=queue, tenant=tenant)
    claim = await f.claim(row.id)
    reason = "terminal" if code else "attempts-exhausted"
    assert await f.nack(claim, "dead", error=f"{code or 'boom'}: no", error_code=code, stop_reason=reason)
    return await f.get(row.id)


async def test_the_counts_follow_each_dead_letter_in_and_out_and_the_view_agrees(
    pg: PostgresDriver, pg_dsn: str, clock: FakeClock
) -> None:
    f = Factory(pg, IdFactory(clock, seed=1), clock)
    rows = []
    for i in range(12):
        clock.advance(10)  # each finishes 10 s after the one before: first and last seen differ
        code = ("X_DECLINED", "X_TIMEOUT", None)[i % 3]
        rows.append(await dead(f, f"charge.{i % 2}", code, tenant=("acme", None, "globex")[i % 4 % 3]))
    await dead(f, "mail", "X_DECLINED", queue="emails")
    await f.job(JobState.COMPLETED, name="charge.0", queue="billing")  # a completion counts nowhere
    assert await agree(pg_dsn, pg, clock) == 13
    ops = Engine(pg, clock=clock).operator(actor="test")
    first, last = rows[0], rows[-1]
    await ops.retry(first.id)  # the group's first: its first_seen read again
    await ops.discard(last.id)  # the group's last: its last_seen read again
    assert await agree(pg_dsn, pg, clock) == 11
    done = await ops.bulk("retry", make_filter(error_code="X_TIMEOUT"))
    assert done.changed == 4 and await agree(pg_dsn, pg, clock) == 7
    await ops.bulk("discard", make_filter(queue="emails"))
    assert await agree(pg_dsn, pg, clock) == 6
    # a retried job that dies again comes back into its group
    claim = await f.claim(first.id)
    assert await f.nack(claim, "dead", error="X_DECLINED: again", error_code="X_DECLINED", stop_reason="terminal")
    assert await agree(pg_dsn, pg, clock) == 7


async def test_concurrent_retries_of_a_groups_first_and_last_leave_its_bounds_exact(
    pg: PostgresDriver, pg_dsn: str, clock: FakeClock
) -> None:
    f = Factory(pg, IdFactory(clock, seed=2), clock)
    rows = []
    for _ in range(10):
        clock.advance(1)
        rows.append(await dead(f, "charge", "X_DECLINED", tenant="acme"))
    ops = Engine(pg, clock=clock).operator(actor="test")
    # each retry is its own transaction on its own connection of the pool, all at once
    await asyncio.gather(*(ops.retry(r.id) for r in (*rows[:3], *rows[-3:])))
    assert await agree(pg_dsn, pg, clock) == 4
    [(*_, n, first_seen, last_seen)] = counted(pg_dsn)
    assert (n, first_seen, last_seen) == (4, rows[3].finished_at, rows[6].finished_at)


async def test_a_dropped_bucket_leaves_the_counts_with_its_young_dead_letters_moved_on(
    pg: PostgresDriver, pg_dsn: str, clock: FakeClock
) -> None:
    retention = 400.0
    cfg = MaintenanceConfig(retention=retention, dead_retention=2 * retention, reindex_interval=None)
    m = Maintenance(pg, clock, holder="m1", config=cfg)
    f = Factory(pg, IdFactory(clock, seed=3), clock)
    old = await dead(f, "charge", "X_DECLINED")  # past the dead letters' retention when its bucket drops
    clock.advance(retention * WIDTH - 1)
    young = await dead(f, "charge", "X_DECLINED")  # within it then: moved to the open bucket
    await dead(f, "mail", None, tenant="acme")
    clock.advance(1)
    await m.run_once()  # sealed
    clock.advance(2 * retention - 50)  # the bucket past retention; the dead letters' cut-off between the two
    assert (await m.run_once()).pruned == 1
    assert await pg.job_get(job_id=old.id) is None and await pg.job_get(job_id=young.id) is not None
    assert await agree(pg_dsn, pg, clock) == 2
    [(*_, n, first_seen, _last)] = [r for r in counted(pg_dsn) if r[0] == "charge"]
    assert (n, first_seen) == (1, young.finished_at)


async def test_a_role_that_does_not_own_the_schema_settles_dead_letters_into_the_counts(
    writer_dsn: str, pg_dsn: str, clock: FakeClock
) -> None:
    async with opened(writer_dsn) as w:
        await dead(Factory(w, IdFactory(clock, seed=4), clock), "charge", "X_DECLINED")
        assert await agree(pg_dsn, w, clock) == 1


async def test_an_upgrade_counts_the_dead_letters_already_there_and_the_view_adds_those_settled_in_place(
    empty_db: Callable[[], str], clock: FakeClock
) -> None:
    dsn = empty_db()
    migrate(dsn, target=COUNTS - 1)
    with psycopg.connect(dsn, autocommit=True) as conn:  # as the release before left them
        for i in range(5):
            conn.execute(
                "insert into jobs.job_done_now (id, name, queue, tenant, idempotency_key, input, state,"
                " max_attempts, run_at, created_at, updated_at, finished_at, error_code, stop_reason, last_error)"
                " values (%s, 'charge', 'billing', 'acme', %s, '{}', 'dead', 3, %s, %s, %s, %s, %s, %s, 'no')",
                (job_uuid(10 + i), f"k{i}", *[clock.now()] * 3, clock.now() + timedelta(seconds=i))
                + (("X_DECLINED", "terminal") if i % 2 else (None, "attempts-exhausted")),
            )
    migrate(dsn)
    async with opened(dsn) as pg:
        assert await agree(dsn, pg, clock) == 5
    with psycopg.connect(dsn, autocommit=True) as conn:
        # a dead row a worker of a release before 0010 settles in place, in jobs.job itself
        conn.execute(
            "insert into jobs.job (id, name, queue, idempotency_key, input, state, max_attempts, run_at,"
            " created_at, updated_at, finished_at, error_code, stop_reason, last_error) values (%s, 'charge',"
            " 'billing', 'k-old', '{}', 'dead', 3, %s, %s, %s, %s, 'X_DECLINED', 'terminal', 'X_DECLINED: old')",
            (job_uuid(1), *[clock.now()] * 4),
        )
    async with opened(dsn) as pg:
        assert await agree(dsn, pg, clock) == 5  # the counts are jobs.job_done's; both views add it
        view = await Introspector(pg, clock=clock).dead_letters()
        assert sum(g.count for g in view.groups) == 6


async def test_a_role_granted_the_settled_rows_by_hand_reads_the_counts_after_the_upgrade(
    empty_db: Callable[[], str], clock: FakeClock
) -> None:
    dsn = empty_db()
    migrate(dsn, target=COUNTS - 1)
    with database_role(
        dsn,
        "oncall",
        "grant usage on schema jobs to {role}",
        "grant select on all tables in schema jobs to {role}",  # the tables there now
    ) as oncall:
        migrate(dsn)
        async with opened(dsn) as pg:
            await dead(Factory(pg, IdFactory(clock, seed=6), clock), "charge", "X_DECLINED")
        async with opened(oncall) as reader:
            view = await Introspector(reader, clock=clock).dead_letters()
            assert [(g.name, g.count) for g in view.groups] == [("charge", 1)]


async def test_a_bulk_batch_rolled_back_by_a_deadlock_on_the_counts_runs_again(
    pg: PostgresDriver, pg_dsn: str, clock: FakeClock
) -> None:
    f = Factory(pg, IdFactory(clock, seed=8), clock)
    for name in ("beta", "alpha", "beta"):  # alpha's between beta's two: either way the batch
        clock.advance(1)  # walks its rows, it takes beta's count before alpha's
        await dead(f, name, "X_DECLINED")
    ops = Engine(pg, clock=clock).operator(actor="test")
    async with await psycopg.AsyncConnection.connect(pg_dsn) as other:  # a transaction of its own
        await other.execute("update jobs.dead_group set n = n where name = 'alpha'")
        bulk = asyncio.ensure_future(ops.bulk("discard", make_filter(queue="billing")))
        while not await _waits_on_a_lock(pg_dsn, other):  # the batch holds beta's count, waits for alpha's
            await asyncio.sleep(0.01)
        # now this transaction asks for beta's: each waits on the other, and the batch, which waited
        # first, is the one PostgreSQL rolls back; run again, it waits for this one to commit
        await other.execute("update jobs.dead_group set n = n where name = 'beta'")
        await other.commit()
        done = await bulk
    assert done.changed == 3 and await agree(pg_dsn, pg, clock) == 0


async def _waits_on_a_lock(dsn: str, besides: psycopg.AsyncConnection[Any]) -> bool:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        row = await (
            await conn.execute(
                # This database's sessions only: another test's lock wait elsewhere on the cluster
                # (the suite runs in parallel) is not the batch's.
                "select count(*) from pg_stat_activity where wait_event_type = 'Lock' and pid <> %s"
                " and datname = current_database()",
                (besides.info.backend_pid,),
            )
        ).fetchone()
    return row is not None and row[0] > 0
