"""Index upkeep under the maintenance leader (engine/services/maintenance.py, index_sizes and
index_rebuild in sql/queries/maintenance.sql): a GIN index over `input` keeps a key for every
value it ever indexed, so the leader rebuilds one grown past its size after its last rebuild,
with REINDEX INDEX CONCURRENTLY, one rebuild at a time fleet-wide, and says so when its role may
not. On a real PostgreSQL."""

from __future__ import annotations

import logging
from typing import Any

import psycopg
import pytest

from engine.clock import FakeClock
from engine.drivers.postgres import PostgresDriver
from engine.drivers.postgres.maintenance import REBUILD_NAMESPACE
from engine.ids import IdFactory
from engine.services.maintenance import LEADER, Maintenance, MaintenanceConfig
from engine.types import Ack, NewJob

Q = "upkeep"
SMALL = MaintenanceConfig(reindex_interval=600, reindex_growth=1.5, reindex_min_bytes=64 * 1024)


def _one(dsn: str, statement: str, params: Any = None) -> Any:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(statement, params).fetchone()
        return None if row is None else row[0]


def _size(dsn: str, index: str) -> int:
    return int(_one(dsn, "select pg_relation_size(%s::regclass)", (index,)))


def _baseline(dsn: str, index: str) -> int | None:
    value = _one(dsn, "select value from jobs.meta where key = %s", (f"index_baseline:{index}",))
    return None if value is None else int(value)


def _open_bucket_gin(dsn: str) -> str:
    """The GIN over input of the open bucket of settled rows (jobs.job_done_now)."""
    return str(
        _one(
            dsn,
            "select 'jobs.' || c.relname from pg_index i join pg_class c on c.oid = i.indexrelid"
            " join pg_am a on a.oid = c.relam where i.indrelid = 'jobs.job_done_now'::regclass and a.amname = 'gin'",
            (),
        )
    )


def _set_baseline(dsn: str, index: str, size: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "insert into jobs.meta (key, value) values (%s, %s) on conflict (key) do update set value = excluded.value",
            (f"index_baseline:{index}", str(size)),
        )


def _filenode(dsn: str, index: str) -> int:
    return int(_one(dsn, "select pg_relation_filenode(%s::regclass)", (index,)))


def _events(caplog: pytest.LogCaptureFixture, name: str) -> list[dict[str, Any]]:
    return [r.fields for r in caplog.records if r.getMessage() == name]  # type: ignore[attr-defined]


async def _settle_unique_jobs(d: PostgresDriver, clock: FakeClock, n: int) -> None:
    """Enqueue ``n`` jobs whose inputs hold unique values, claim and ack them all (the rows move
    to jobs.job_done), in batches of 1000."""
    ids = IdFactory(clock, seed=11)
    for start in range(0, n, 1000):
        batch = [
            NewJob(ids.new(), "upkeep.job", Q, f"k{i}", {"i": i, "t": f"2026-12-04T12:00:{i:08d}"}, 3)
            for i in range(start, min(n, start + 1000))
        ]
        await d.job_enqueue(jobs=batch, now=clock.now())
    while True:
        claimed = await d.worker_claim(queues=[Q], limit=1000, worker="w", now=clock.now(), lease_seconds=60)
        if not claimed.jobs:
            return
        await d.job_ack_many(acks=[Ack(c.claim) for c in claimed.jobs], now=clock.now())


def _delete_settled_and_vacuum(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("delete from jobs.job")
        conn.execute("vacuum jobs.job, jobs.job_done")


async def test_a_gin_grown_past_its_baseline_is_rebuilt_smaller_and_its_new_size_becomes_the_baseline(
    pg: PostgresDriver, pg_dsn: str, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    checks: list[int] = []
    real_sizes = pg.index_sizes

    async def counted(**kw: Any) -> Any:
        checks.append(1)
        return await real_sizes(**kw)

    monkeypatch.setattr(pg, "index_sizes", counted)
    m = Maintenance(pg, clock, holder="m1", config=SMALL)
    gin = _open_bucket_gin(pg_dsn)  # where the acks write (0012_settled_buckets)
    first = await m.run_once()  # first seen: each GIN's size now is its baseline
    assert first.reindexed == () and len(checks) == 1
    empty = _baseline(pg_dsn, gin)
    assert empty == _size(pg_dsn, gin)

    await _settle_unique_jobs(pg, clock, 20_000)
    _delete_settled_and_vacuum(pg_dsn)
    grown = _size(pg_dsn, gin)
    assert grown > 1.5 * empty and grown > SMALL.reindex_min_bytes  # vacuumed, and still grown

    clock.advance(600)
    done = await m.run_once()
    assert gin in done.reindexed and len(checks) == 2
    rebuilt = _size(pg_dsn, gin)
    assert rebuilt < grown
    for index in done.reindexed:
        assert _baseline(pg_dsn, index) == _size(pg_dsn, index)

    clock.advance(300)
    assert (await m.run_once()).reindexed == () and len(checks) == 2  # within the interval: no check
    clock.advance(300)
    assert (await m.run_once()).reindexed == () and len(checks) == 3  # checked: not grown since
    assert _size(pg_dsn, gin) == rebuilt


async def test_a_rebuild_logs_the_index_its_bytes_before_and_after_and_its_seconds(
    pg: PostgresDriver, pg_dsn: str, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobs")
    _set_baseline(pg_dsn, "jobs.job_list_input", 1)  # any size is grown past a one-byte baseline
    cfg = MaintenanceConfig(reindex_growth=1.5, reindex_min_bytes=0)
    size = _size(pg_dsn, "jobs.job_list_input")
    done = await Maintenance(pg, clock, holder="m1", config=cfg).run_once()
    assert done.reindexed == ("jobs.job_list_input",)
    (event,) = _events(caplog, "jobs.maintenance.reindexed")
    assert (event["index"], event["bytes_before"]) == ("jobs.job_list_input", size)
    assert event["bytes_after"] == _size(pg_dsn, "jobs.job_list_input")
    assert event["seconds"] >= 0


async def test_a_worker_that_does_not_lead_rebuilds_nothing(pg: PostgresDriver, pg_dsn: str, clock: FakeClock) -> None:
    _set_baseline(pg_dsn, "jobs.job_list_input", 1)
    cfg = MaintenanceConfig(reindex_growth=1.5, reindex_min_bytes=0)
    leader = Maintenance(pg, clock, holder="m1", config=MaintenanceConfig())  # leads; its indexes not grown
    assert (await leader.run_once()).reindexed == ()
    before = _filenode(pg_dsn, "jobs.job_list_input")
    other = await Maintenance(pg, clock, holder="m2", config=cfg).run_once()
    assert (other.leader, other.reindexed) == (False, ())
    assert await pg.index_sizes(leader=LEADER, holder="m2", term=1, now=clock.now()) == []
    assert _filenode(pg_dsn, "jobs.job_list_input") == before


async def test_a_leader_whose_term_moved_on_starts_no_rebuild(
    pg: PostgresDriver, pg_dsn: str, clock: FakeClock
) -> None:
    term = await pg.leader_acquire(name=LEADER, holder="m1", now=clock.now(), lease_seconds=30)
    assert term is not None
    clock.advance(31)
    assert await pg.leader_acquire(name=LEADER, holder="m2", now=clock.now(), lease_seconds=30) == term + 1
    before = _filenode(pg_dsn, "jobs.job_list_input")
    size = _size(pg_dsn, "jobs.job_list_input")
    stale = await pg.index_rebuild(
        leader=LEADER, holder="m1", term=term, now=clock.now(), index="jobs.job_list_input", before=size
    )
    assert stale is None and _filenode(pg_dsn, "jobs.job_list_input") == before


async def test_no_rebuild_starts_while_another_session_holds_the_rebuild_lock(
    pg: PostgresDriver, pg_dsn: str, clock: FakeClock
) -> None:
    term = await pg.leader_acquire(name=LEADER, holder="m1", now=clock.now(), lease_seconds=30)
    assert term is not None
    before = _filenode(pg_dsn, "jobs.job_list_input")
    with psycopg.connect(pg_dsn, autocommit=True) as other:  # a leader before a change of lease
        assert other.execute("select pg_try_advisory_lock(%s, 1)", (REBUILD_NAMESPACE,)).fetchone() == (True,)
        held = await pg.index_rebuild(
            leader=LEADER, holder="m1", term=term, now=clock.now(), index="jobs.job_list_input", before=0
        )
        assert held is None and _filenode(pg_dsn, "jobs.job_list_input") == before
    freed = await pg.index_rebuild(
        leader=LEADER, holder="m1", term=term, now=clock.now(), index="jobs.job_list_input", before=0
    )
    assert freed is not None and _filenode(pg_dsn, "jobs.job_list_input") != before


async def test_one_pass_rebuilds_every_grown_gin_though_the_server_has_not_yet_ended_the_last_rebuilds_session(
    pg: PostgresDriver, pg_dsn: str, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A closed session's locks are freed when the server ends it, a moment after the client's
    close returns: here the server is held at that moment (each upkeep session stays open)."""
    kept: list[Any] = []
    real_connect = pg.pools.connect_own

    async def lingering() -> Any:
        conn = await real_connect()
        kept.append(conn)

        async def not_yet() -> None:
            pass

        conn.close = not_yet  # type: ignore[method-assign]
        return conn

    monkeypatch.setattr(pg.pools, "connect_own", lingering)
    grown = ["jobs.job_list_input", "jobs.job_live_input"]
    for index in grown:
        _set_baseline(pg_dsn, index, 1)
    cfg = MaintenanceConfig(reindex_growth=1.5, reindex_min_bytes=0)
    try:
        done = await Maintenance(pg, clock, holder="m1", config=cfg).run_once()
    finally:
        for conn in kept:
            await type(conn).close(conn)
    assert [i for i in done.reindexed if i in grown] == grown
    assert len(kept) >= 2  # each rebuild's session was one of those kept open


def _leave_an_interrupted_rebuild(dsn: str) -> None:
    """A real leftover: REINDEX CONCURRENTLY creates its invalid copy `<index>_ccnew`, then waits
    for the table's writers; one holds its lock, the wait runs past lock_timeout, and the copy
    stays behind."""
    with psycopg.connect(dsn) as writer, psycopg.connect(dsn, autocommit=True) as rebuild:
        writer.execute("lock table jobs.job_done in row exclusive mode")
        rebuild.execute("set lock_timeout = '200ms'")
        with pytest.raises(psycopg.errors.LockNotAvailable):
            rebuild.execute("reindex index concurrently jobs.job_list_input")
        writer.rollback()


def _leftovers(dsn: str) -> list[tuple[str, bool]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "select c.relname, i.indisvalid from pg_index i join pg_class c on c.oid = i.indexrelid"
            " where c.relname like '%%ccnew%%' order by 1"
        ).fetchall()
        return [(r[0], r[1]) for r in rows]


async def test_an_interrupted_rebuilds_invalid_ccnew_copy_is_dropped_before_the_next_rebuild(
    pg: PostgresDriver, pg_dsn: str, clock: FakeClock
) -> None:
    _leave_an_interrupted_rebuild(pg_dsn)
    _leave_an_interrupted_rebuild(pg_dsn)  # the second leaves _ccnew1
    assert _leftovers(pg_dsn) == [("job_list_input_ccnew", False), ("job_list_input_ccnew1", False)]
    assert "jobs.job_list_input_ccnew" not in {
        s.index for s in await pg.index_sizes(leader=LEADER, holder="m1", term=1, now=clock.now())
    }  # not a GIN to grow: invalid ones are left out of the check
    _set_baseline(pg_dsn, "jobs.job_list_input", 1)
    cfg = MaintenanceConfig(reindex_growth=1.5, reindex_min_bytes=0)
    done = await Maintenance(pg, clock, holder="m1", config=cfg).run_once()
    assert done.reindexed == ("jobs.job_list_input",)
    assert _leftovers(pg_dsn) == []


async def test_the_memory_driver_has_no_index_to_check_or_rebuild(clock: FakeClock) -> None:
    from engine.drivers.memory import MemoryDriver

    mem = MemoryDriver()
    result = await Maintenance(mem, clock, holder="m1", config=SMALL).run_once()
    assert result.leader and result.reindexed == ()
    assert await mem.index_sizes(leader=LEADER, holder="m1", term=1, now=clock.now()) == []


async def test_a_role_that_does_not_own_the_schema_logs_one_warning_with_the_fix_and_the_pass_succeeds(
    pg_dsn: str, writer_dsn: str, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    for index in ("jobs.job_list_input", "jobs.job_live_input"):
        _set_baseline(pg_dsn, index, 1)  # both grown
    before = _filenode(pg_dsn, "jobs.job_list_input")
    cfg = MaintenanceConfig(reindex_growth=1.5, reindex_min_bytes=0)
    d = PostgresDriver(writer_dsn)
    await d.open()
    try:
        m = Maintenance(d, clock, holder="m1", config=cfg)
        result = await m.run_once()
        assert (result.leader, result.reindexed) == (True, ())
        (warning,) = _events(caplog, "jobs.maintenance.reindex-refused")
        assert warning["index"] == "jobs.job_list_input"
        assert "REINDEX INDEX CONCURRENTLY jobs.job_list_input" in warning["fix"]
        assert "owner" in warning["fix"]
        clock.advance(60)
        assert (await m.run_once()).reindexed == ()
        assert len(_events(caplog, "jobs.maintenance.reindex-refused")) == 1  # not again within the interval
        clock.advance(600)
        await m.run_once()
        assert len(_events(caplog, "jobs.maintenance.reindex-refused")) == 2  # once a check
    finally:
        await d.close()
    assert _filenode(pg_dsn, "jobs.job_list_input") == before
