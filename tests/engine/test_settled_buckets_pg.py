"""Buckets of settled rows (0012_settled_buckets.sql, engine/services/buckets.py): every settling
statement inserts into the open bucket, jobs.job_done_now; the maintenance leader seals it after
a quarter of the retention and drops a sealed bucket whole once every row in it is past its
retention, its young dead letters moved to the open bucket first and its jobs' attempts, steps
and history deleted with it. On a real PostgreSQL: the buckets are its tables."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from engine.clock import FakeClock
from engine.drivers.memory import MemoryDriver
from engine.drivers.migrations import migrations
from engine.drivers.postgres import PostgresDriver
from engine.ids import IdFactory
from engine.schema import migrate
from engine.services.buckets import WIDTH
from engine.services.maintenance import LEADER, Maintenance, MaintenanceConfig
from engine.testing.factory import make_job
from engine.types import Ack, JobState, NewJob, StoredStep
from tests.engine.upgrades import job_uuid, opened

BUCKETS = next(m.version for m in migrations() if m.name == "settled_buckets")
RETENTION = 400.0  # seconds: a bucket is open for a quarter of it, 100 s
CFG = MaintenanceConfig(retention=RETENTION, dead_retention=4 * RETENTION, reindex_interval=None)


pytestmark = pytest.mark.usefixtures("bucket_opened_now")


def _tables(dsn: str) -> dict[str, int]:
    """Each bucket of settled rows -> its rows, by name."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        names = [
            str(r[0])
            for r in conn.execute(
                "select c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid"
                " where i.inhparent = 'jobs.job_done'::regclass order by c.relname"
            )
        ]
        counts = [conn.execute(f"select count(*) from only jobs.{name}").fetchone() for name in names]
    return {name: int(c[0]) for name, c in zip(names, counts, strict=True) if c is not None}


def _where(dsn: str, job_id: str) -> str | None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("select tableoid::regclass::text from jobs.job where id = %s", (job_id,)).fetchone()
    return None if row is None else str(row[0])


def _events(caplog: pytest.LogCaptureFixture, name: str) -> list[dict[str, Any]]:
    return [r.fields for r in caplog.records if r.getMessage() == name]  # type: ignore[attr-defined]


async def _completed(pg: PostgresDriver, clock: FakeClock, n: int, *, seed: int) -> list[str]:
    """``n`` jobs enqueued, claimed and acked now, in one batch each: their ids."""
    ids = IdFactory(clock, seed=seed)
    jobs = [NewJob(ids.new(), "bucket.job", "q", f"k{seed}-{i}", {"i": i}, 3) for i in range(n)]
    await pg.job_enqueue(jobs=jobs, now=clock.now())
    claimed = await pg.worker_claim(queues=["q"], limit=n, worker="w", now=clock.now(), lease_seconds=60)
    return await pg.job_ack_many(acks=[Ack(c.claim) for c in claimed.jobs], now=clock.now())


async def test_the_leader_seals_the_open_bucket_after_a_quarter_of_the_retention_and_reads_see_every_bucket(
    pg: PostgresDriver, pg_dsn: str, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="jobs")
    m = Maintenance(pg, clock, holder="m1", config=CFG)
    first = await _completed(pg, clock, 3, seed=1)
    assert {_where(pg_dsn, j) for j in first} == {"jobs.job_done_now"}
    clock.advance(RETENTION * WIDTH - 1)
    await m.run_once()
    assert list(_tables(pg_dsn)) == ["job_done_now"]  # not open long enough yet
    clock.advance(1)
    await m.run_once()
    (sealed,) = _events(caplog, "jobs.maintenance.sealed")
    bucket = f"job_done_{sealed['bucket']}"
    assert _tables(pg_dsn) == {bucket: 3, "job_done_now": 0}
    second = await _completed(pg, clock, 2, seed=2)
    assert _tables(pg_dsn) == {bucket: 3, "job_done_now": 2}
    for job_id in first + second:  # one job, the lists and the counts read every bucket
        row = await pg.job_get(job_id=job_id)
        assert row is not None and row.state is JobState.COMPLETED
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        assert conn.execute("select count(*) from jobs.job where state = 'completed'").fetchone() == (5,)
    # Each bucket has the settled rows' indexes (jobs.job_done's), the sealed one's named for it.
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        ix = {
            t: {
                r[0]: r[1]
                for r in conn.execute("select indexname, indexdef from pg_indexes where tablename = %s", (t,))
            }
            for t in ("job_done", bucket, "job_done_now")
        }
    assert all(name.startswith(f"{bucket}_") for name in ix[bucket])
    shapes = {t: sorted(d.split(" USING ", 1)[1] for d in defs.values()) for t, defs in ix.items()}
    assert shapes["job_done"] == shapes[bucket] == shapes["job_done_now"] and len(shapes["job_done"]) == 10


async def test_a_sealed_bucket_past_retention_is_dropped_whole_with_its_jobs_steps_attempts_and_history(
    pg: PostgresDriver, pg_dsn: str, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobs")
    m = Maintenance(pg, clock, holder="m1", config=CFG)
    ran = await make_job(pg, IdFactory(clock, seed=3), clock.now(), state=JobState.READY, queue="q")
    [claimed] = (await pg.worker_claim(queues=["q"], limit=1, worker="w", now=clock.now(), lease_seconds=60)).jobs
    step = StoredStep(ran.id, "fetch", 0, "run", "completed", 1, claimed.claim.run, clock.now(), clock.now(), {})
    assert await pg.step_save(claim=claimed.claim, step=step)
    assert await pg.job_ack_many(acks=[Ack(claimed.claim)], now=clock.now()) == [ran.id]
    cancelled = await make_job(pg, IdFactory(clock, seed=4), clock.now(), state=JobState.CANCELLED)
    others = await _completed(pg, clock, 5, seed=5)
    clock.advance(RETENTION * WIDTH)
    await m.run_once()  # sealed
    (bucket,) = [t for t in _tables(pg_dsn) if t != "job_done_now"]
    clock.advance(RETENTION - 1)  # sealed RETENTION - 1 s ago: its rows are not all past retention
    assert (await m.run_once()).pruned == 0 and bucket in _tables(pg_dsn)
    clock.advance(2)
    done = await m.run_once()
    assert done.pruned == 7 and bucket not in _tables(pg_dsn)
    assert _events(caplog, "jobs.maintenance.dropped")[0]["count"] == 7
    for job_id in [ran.id, cancelled.id, *others]:
        assert await pg.job_get(job_id=job_id) is None
    assert await pg.step_list(job_id=ran.id) == [] and await pg.job_attempts(job_id=ran.id) == []
    assert await pg.job_history(job_id=cancelled.id) == []


async def test_a_dead_letter_within_its_own_retention_outlives_its_bucket_in_the_open_one(
    pg: PostgresDriver, pg_dsn: str, clock: FakeClock
) -> None:
    m = Maintenance(pg, clock, holder="m1", config=CFG)
    dead = await make_job(pg, IdFactory(clock, seed=6), clock.now(), state=JobState.DEAD)
    done = await _completed(pg, clock, 2, seed=7)
    clock.advance(RETENTION * WIDTH)
    await m.run_once()
    clock.advance(RETENTION + 1)
    assert (await m.run_once()).pruned == 2  # the completed ones; the dead letter kept
    assert [await pg.job_get(job_id=j) for j in done] == [None, None]
    row = await pg.job_get(job_id=dead.id)
    assert row is not None and row.state is JobState.DEAD and row.stop_reason == "terminal"
    assert _where(pg_dsn, dead.id) == "jobs.job_done_now" and await pg.job_attempts(job_id=dead.id) != []


async def test_a_bucket_holding_a_row_finished_after_its_seal_waits_until_that_row_is_past_retention(
    pg: PostgresDriver, pg_dsn: str, clock: FakeClock
) -> None:
    # A worker whose clock runs ahead stamps finished_at later than the leader's seal.
    m = Maintenance(pg, clock, holder="m1", config=CFG)
    ahead = FakeClock(clock.now() + timedelta(seconds=RETENTION * WIDTH + 60))
    late = await _completed(pg, ahead, 1, seed=8)
    clock.advance(RETENTION * WIDTH)
    await m.run_once()
    clock.advance(RETENTION + 1)
    assert (await m.run_once()).pruned == 0 and await pg.job_get(job_id=late[0]) is not None
    clock.advance(60)
    assert (await m.run_once()).pruned == 1 and await pg.job_get(job_id=late[0]) is None


async def test_the_row_pruner_leaves_a_sealed_bucket_to_its_drop_and_prunes_the_open_one_row_by_row(
    pg: PostgresDriver, pg_dsn: str, clock: FakeClock
) -> None:
    old = await _completed(pg, clock, 2, seed=9)
    assert await pg.settled_seal(
        leader=LEADER, holder="m1", term=await _term(pg, clock), now=clock.now()
    )  # sealed by hand: no drop runs below, only the row pruner
    young = await _completed(pg, clock, 2, seed=10)
    clock.advance(RETENTION + 1)
    term = await _term(pg, clock)
    before, dead_before = clock.now() - timedelta(seconds=RETENTION), clock.now() - timedelta(seconds=4 * RETENTION)
    pruned = await pg.job_prune(
        leader=LEADER, holder="m1", term=term, now=clock.now(), before=before, dead_before=dead_before, limit=10
    )
    assert sorted(pruned) == sorted(young)
    assert [await pg.job_get(job_id=j) is not None for j in old] == [True, True]


async def _term(pg: PostgresDriver, clock: FakeClock) -> int:
    term = await pg.leader_acquire(name=LEADER, holder="m1", now=clock.now(), lease_seconds=60)
    assert term is not None
    return term


async def test_a_seal_gives_up_on_a_reader_holding_the_open_bucket_and_the_next_pass_seals(
    pg: PostgresDriver, pg_dsn: str, clock: FakeClock
) -> None:
    term = await _term(pg, clock)
    with psycopg.connect(pg_dsn) as reader:  # a long read of jobs.job holds every bucket
        reader.execute("select count(*) from jobs.job")
        # Gives up (without its lock timeout this would wait for the reader, which waits for it).
        assert await pg.settled_seal(leader=LEADER, holder="m1", term=term, now=clock.now()) is None
        assert await _completed(pg, clock, 1, seed=11)  # an ack meanwhile goes through
    sealed = await pg.settled_seal(leader=LEADER, holder="m1", term=term, now=clock.now())
    assert sealed is not None and f"job_done_{sealed}" in _tables(pg_dsn)


async def test_a_prepared_settling_statement_inserts_into_the_new_open_bucket_after_a_seal(
    pg: PostgresDriver, pg_dsn: str, clock: FakeClock
) -> None:
    # psycopg prepares a statement after its fifth run on a connection: the plan named the old
    # open bucket, and the seal's rename invalidates it.
    for seed in range(20, 28):
        await _completed(pg, clock, 1, seed=seed)
    sealed = await pg.settled_seal(leader=LEADER, holder="m1", term=await _term(pg, clock), now=clock.now())
    after = [j for seed in range(30, 38) for j in await _completed(pg, clock, 1, seed=seed)]
    assert len(after) == 8 and {_where(pg_dsn, j) for j in after} == {"jobs.job_done_now"}
    assert _tables(pg_dsn) == {f"job_done_{sealed}": 8, "job_done_now": 8}


async def test_a_worker_that_does_not_lead_seals_and_drops_nothing(
    pg: PostgresDriver, pg_dsn: str, clock: FakeClock
) -> None:
    await _term(pg, clock)  # m1 leads
    term = 99
    assert await pg.settled_buckets(leader=LEADER, holder="m2", term=term, now=clock.now()) == []
    assert await pg.settled_seal(leader=LEADER, holder="m2", term=term, now=clock.now()) is None
    assert list(_tables(pg_dsn)) == ["job_done_now"]
    assert (
        await pg.settled_drop(
            leader=LEADER,
            holder="m2",
            term=term,
            now=clock.now(),
            bucket=1,
            before=clock.now(),
            dead_before=clock.now(),
        )
        is None
    )


async def test_a_role_without_the_grant_is_told_once_with_the_fix_and_prunes_row_by_row(
    pg_dsn: str, writer_dsn: str, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="jobs")
    async with opened(writer_dsn) as writer:
        m = Maintenance(writer, clock, holder="m1", config=CFG)
        done = await _completed(writer, clock, 2, seed=12)
        clock.advance(RETENTION * WIDTH)
        await m.run_once()
        await m.run_once()
        (warning,) = _events(caplog, "jobs.maintenance.buckets-refused")
        assert "grant execute on all functions in schema jobs to jobs_writer" in warning["fix"]
        assert list(_tables(pg_dsn)) == ["job_done_now"]
        clock.advance(RETENTION)
        assert (await m.run_once()).pruned == 2 and [await writer.job_get(job_id=j) for j in done] == [None, None]


async def test_the_memory_driver_keeps_settled_rows_in_no_bucket(clock: FakeClock) -> None:
    d = MemoryDriver()
    term = await d.leader_acquire(name=LEADER, holder="m1", now=clock.now(), lease_seconds=60)
    assert term is not None
    assert await d.settled_buckets(leader=LEADER, holder="m1", term=term, now=clock.now()) == []
    assert await d.settled_seal(leader=LEADER, holder="m1", term=term, now=clock.now()) is None


async def test_an_upgrade_from_0011_keeps_its_settled_rows_readable_and_pruned_row_by_row(
    empty_db: Callable[[], str], clock: FakeClock
) -> None:
    dsn = empty_db()
    migrate(dsn, target=BUCKETS - 1)
    old = job_uuid(1)
    with psycopg.connect(dsn, autocommit=True) as conn:  # as a 0011 release's ack left it
        conn.execute(
            "insert into jobs.job_done (id, name, queue, idempotency_key, input, state, max_attempts, run_at,"
            " created_at, updated_at, finished_at) values (%s, 'bucket.job', 'q', 'k', '{}', 'completed', 3,"
            " %s, %s, %s, %s)",
            (old, clock.now(), clock.now(), clock.now(), clock.now()),
        )
    migrate(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("update jobs.job_done_bucket set opened_at = %s", (clock.now(),))
    async with opened(dsn) as pg:
        row = await pg.job_get(job_id=old)
        assert row is not None and row.state is JobState.COMPLETED and _where(dsn, old) == "jobs.job_done"
        [new] = await _completed(pg, clock, 1, seed=40)
        assert _where(dsn, new) == "jobs.job_done_now"
        m = Maintenance(pg, clock, holder="m1", config=CFG)
        clock.advance(RETENTION + 1)  # the old row deleted; the new one's bucket sealed by this pass
        assert (await m.run_once()).pruned == 1 and await pg.job_get(job_id=old) is None
        assert await pg.job_get(job_id=new) is not None
        clock.advance(RETENTION + 1)  # and dropped once its seal is past retention
        assert (await m.run_once()).pruned == 1 and await pg.job_get(job_id=new) is None


async def test_a_new_bucket_carries_the_grants_of_jobs_job_done_so_a_role_granted_by_hand_still_settles(
    pg_dsn: str, writer_dsn: str, clock: FakeClock
) -> None:
    # The writer was granted each table by hand (no default privileges): a bucket opened by a
    # seal is a new table, and an ack into it must not be refused.
    writer = psycopg.conninfo.conninfo_to_dict(writer_dsn)["user"]
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f'grant execute on all functions in schema jobs to "{writer}"')
    async with opened(writer_dsn) as w:
        before = await _completed(w, clock, 1, seed=50)
        sealed = await w.settled_seal(leader=LEADER, holder="m1", term=await _term(w, clock), now=clock.now())
        after = await _completed(w, clock, 1, seed=51)
    assert sealed is not None and _tables(pg_dsn) == {f"job_done_{sealed}": 1, "job_done_now": 1}
    assert _where(pg_dsn, before[0]) == f"jobs.job_done_{sealed}" and _where(pg_dsn, after[0]) == "jobs.job_done_now"
