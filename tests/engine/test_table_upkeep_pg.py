"""Table upkeep under the maintenance leader (engine/services/maintenance.py, table_rows and
table_vacuum in sql/queries/maintenance.sql): every job leaves dead row versions in jobs.job, so
the leader vacuums a jobs table whose dead rows pass vacuum_threshold + vacuum_scale_factor x its
live rows, never more than a tenth of the time (VACUUM_DUTY) nor while a transaction older than
its last vacuum holds what died since, and says once when its role may not. On a real
PostgreSQL, with autovacuum kept off the table so only the leader vacuums it."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from engine.clock import FakeClock
from engine.drivers.memory import MemoryDriver
from engine.drivers.postgres import PostgresDriver
from engine.ids import IdFactory
from engine.records import TableRows
from engine.services.maintenance import LEADER, Maintenance, MaintenanceConfig
from engine.types import NewJob
from tests.engine.upgrades import opened


@pytest.fixture
async def pg(pg_dsn: str) -> AsyncIterator[PostgresDriver]:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("alter table jobs.job set (autovacuum_enabled = off)")
    async with opened(pg_dsn) as d:
        yield d


def _vacuums(dsn: str) -> tuple[int, int]:
    """jobs.job's (manual vacuums so far, dead row versions) as the statistics count them."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "select vacuum_count, n_dead_tup from pg_stat_user_tables where relid = 'jobs.job'::regclass"
        ).fetchone()
        assert row is not None
        return int(row[0]), int(row[1])


async def _dead_rows(d: PostgresDriver, dsn: str, clock: FakeClock, n: int) -> None:
    """``n`` live jobs, each then updated once: ``n`` dead row versions in jobs.job, in the
    statistics before this returns (the session flushes its counts when it goes idle)."""
    ids = IdFactory(clock, seed=5)
    await d.job_enqueue(
        jobs=[NewJob(ids.new(), "upkeep.job", "q", f"k{i}", {"i": i}, 3) for i in range(n)], now=clock.now()
    )
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("update jobs.job set priority = priority + 1")
        conn.execute("select pg_stat_force_next_flush()")
    assert _vacuums(dsn) == (0, n)


def _events(caplog: pytest.LogCaptureFixture, name: str) -> list[dict[str, Any]]:
    return [r.fields for r in caplog.records if r.getMessage() == name]  # type: ignore[attr-defined]


async def test_the_leader_vacuums_a_jobs_table_whose_dead_rows_pass_its_threshold(
    pg: PostgresDriver, pg_dsn: str, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="jobs")
    await _dead_rows(pg, pg_dsn, clock, 300)
    m = Maintenance(pg, clock, holder="m1", config=MaintenanceConfig(vacuum_threshold=100, vacuum_scale_factor=0))
    done = await m.run_once()
    assert done.vacuumed == ("jobs.job",)
    assert _vacuums(pg_dsn) == (1, 0)
    (event,) = _events(caplog, "jobs.maintenance.vacuumed")
    assert (event["table"], event["dead"]) == ("jobs.job", 300)
    assert event["seconds"] >= 0


async def test_a_table_within_its_threshold_or_with_upkeep_off_as_by_default_is_left_to_autovacuum(
    pg: PostgresDriver, pg_dsn: str, clock: FakeClock
) -> None:
    await _dead_rows(pg, pg_dsn, clock, 300)
    assert (await Maintenance(pg, clock, holder="m1").run_once()).vacuumed == ()  # off by default
    cfg = MaintenanceConfig(vacuum_threshold=300, vacuum_scale_factor=0)  # more than 300: 300 is within
    assert (await Maintenance(pg, clock, holder="m1", config=cfg).run_once()).vacuumed == ()
    assert _vacuums(pg_dsn) == (0, 300)


async def test_a_worker_that_does_not_lead_reads_no_tables_and_vacuums_nothing(
    pg: PostgresDriver, pg_dsn: str, clock: FakeClock
) -> None:
    await _dead_rows(pg, pg_dsn, clock, 300)
    cfg = MaintenanceConfig(vacuum_threshold=100, vacuum_scale_factor=0)
    assert (await Maintenance(pg, clock, holder="m1").run_once()).leader  # leads, upkeep off
    other = await Maintenance(pg, clock, holder="m2", config=cfg).run_once()
    assert (other.leader, other.vacuumed) == (False, ())
    assert await pg.table_rows(leader=LEADER, holder="m2", term=1, now=clock.now()) == []
    rows = {t.table: t for t in await pg.table_rows(leader=LEADER, holder="m1", term=1, now=clock.now())}
    assert (rows["jobs.job"].dead, rows["jobs.job"].owned) == (300, True)
    assert {"jobs.job_done", "jobs.attempt", "jobs.leader"} <= rows.keys()  # every table of the schema
    assert _vacuums(pg_dsn) == (0, 300)


async def test_no_vacuum_while_a_transaction_older_than_the_last_one_holds_what_died_since(
    pg: PostgresDriver, pg_dsn: str, clock: FakeClock
) -> None:
    await _dead_rows(pg, pg_dsn, clock, 300)
    cfg = MaintenanceConfig(vacuum_threshold=100, vacuum_scale_factor=0)
    m = Maintenance(pg, clock, holder="m1", config=cfg)
    with psycopg.connect(pg_dsn) as holder:
        holder.execute("select txid_current()")  # open, idle in transaction: the horizon held
        assert (await m.run_once()).vacuumed == ("jobs.job",)  # its last vacuum: none before
        assert _vacuums(pg_dsn) == (1, 0)
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute("update jobs.job set priority = priority + 1")
            conn.execute("select pg_stat_force_next_flush()")
        clock.advance(60)  # past the duty rule's wait
        assert (await m.run_once()).vacuumed == ()  # all 300 visible to the holder
        rows = {t.table: t for t in await pg.table_rows(leader=LEADER, holder="m1", term=1, now=clock.now())}
        assert (rows["jobs.job"].dead, rows["jobs.job"].held) == (300, True)
        holder.rollback()
    assert (await m.run_once()).vacuumed == ("jobs.job",)
    assert _vacuums(pg_dsn) == (2, 0)


async def test_a_role_that_does_not_own_the_table_is_told_once_with_the_fix_and_vacuums_nothing(
    pg: PostgresDriver, pg_dsn: str, writer_dsn: str, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    await _dead_rows(pg, pg_dsn, clock, 300)
    cfg = MaintenanceConfig(vacuum_threshold=100, vacuum_scale_factor=0)
    async with opened(writer_dsn) as writer:
        m = Maintenance(writer, clock, holder="m1", config=cfg)
        for _ in range(2):
            result = await m.run_once()
            assert (result.leader, result.vacuumed) == (True, ())
            clock.advance(5)
    (warning,) = _events(caplog, "jobs.maintenance.vacuum-refused")
    assert (warning["table"], warning["dead"]) == ("jobs.job", 300)
    assert "owner" in warning["fix"] and "autovacuum" in warning["cause"]
    assert _vacuums(pg_dsn) == (0, 300)


class _Bloated(MemoryDriver):
    """A memory driver whose jobs.job always holds 50,000 dead rows and whose vacuum takes 2 s."""

    vacuums = 0

    async def table_rows(self, **kw: Any) -> list[TableRows]:
        return [TableRows("jobs.job", 1_000, 50_000, True)]

    async def table_vacuum(self, *, table: str) -> float:
        self.vacuums += 1
        return 2.0


async def test_a_table_is_vacuumed_again_only_after_nine_times_its_last_vacuum(clock: FakeClock) -> None:
    d = _Bloated()
    m = Maintenance(d, clock, holder="m1", config=MaintenanceConfig(vacuum_threshold=10_000))
    assert (await m.run_once()).vacuumed == ("jobs.job",)
    clock.advance(17.9)  # a 2 s vacuum: none of that table for 18 s (a tenth of the time at most)
    assert (await m.run_once()).vacuumed == () and d.vacuums == 1
    clock.advance(0.1)
    assert (await m.run_once()).vacuumed == ("jobs.job",) and d.vacuums == 2


async def test_the_memory_driver_has_no_table_to_vacuum(clock: FakeClock) -> None:
    mem = MemoryDriver()
    result = await Maintenance(mem, clock, holder="m1", config=MaintenanceConfig(vacuum_threshold=1)).run_once()
    assert result.leader and result.vacuumed == ()
    assert await mem.table_rows(leader=LEADER, holder="m1", term=1, now=clock.now()) == []
