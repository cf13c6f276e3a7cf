"""The leader's physical upkeep, run against every driver: the buckets of settled rows (settled_buckets,
settled_seal, settled_drop), the GINs' sizes and rebuilds (index_sizes, index_rebuild) and the
tables' row versions and vacuums (table_rows, table_vacuum). On PostgreSQL they are its tables and
indexes; the memory driver keeps its settled rows in no bucket, has no index and no dead row
version: its listings answer [] and its seal None, and a bucket, index or table named to act on
is one they do not list (X_INVALID_ARGUMENT, tests/contract/test_upkeep_unlisted_names.py). What holds
on both: none of them reads or changes anything for a caller that is not the leader at its term,
and a settled job past retention is gone after the leader's seal, drop and prune, with its
attempts and history, while a dead letter within its own retention stays."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import JobsError
from engine.ids import IdFactory
from engine.testing import Factory
from engine.types import JobState, NewJob

NAME = "maintenance"
LEASE = 30.0


async def _lead(driver: Driver, clock: FakeClock) -> int:
    term = await driver.leader_acquire(name=NAME, holder="m", now=clock.now(), lease_seconds=3600)
    assert term is not None
    return term


async def test_a_caller_that_is_not_the_leader_at_its_term_reads_no_bucket_index_or_table_and_seals_or_rebuilds_nothing(
    driver: Driver, clock: FakeClock
) -> None:
    term = await _lead(driver, clock)
    leader = await driver.settled_buckets(leader=NAME, holder="m", term=term, now=clock.now())
    for holder, at in (("other", term), ("m", term + 1), ("m", term - 1)):
        fence: dict[str, Any] = {"leader": NAME, "holder": holder, "term": at, "now": clock.now()}
        assert await driver.settled_buckets(**fence) == []
        assert await driver.settled_seal(**fence) is None
        window: dict[str, Any] = {
            "before": clock.now() + timedelta(days=1),
            "dead_before": clock.now() + timedelta(days=1),
        }
        assert await driver.settled_drop(**fence, bucket=1, **window) is None
        assert await driver.index_sizes(**fence) == []
        assert await driver.index_rebuild(**fence, index="jobs.job_live_input", before=0) is None
        assert await driver.table_rows(**fence) == []
    assert await driver.settled_buckets(leader=NAME, holder="m", term=term, now=clock.now()) == leader


async def test_the_buckets_of_settled_rows_are_postgres_tables_and_the_memory_driver_keeps_none(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    f = Factory(driver, ids, clock)
    done = await f.job(JobState.COMPLETED)
    term = await _lead(driver, clock)
    fence: dict[str, Any] = {"leader": NAME, "holder": "m", "term": term, "now": clock.now()}
    buckets = await driver.settled_buckets(**fence)
    if driver.kind == "memory":
        assert buckets == []
        assert await driver.settled_seal(**fence) is None
        with pytest.raises(JobsError, match="X_INVALID_ARGUMENT"):  # no bucket 1: settled_buckets lists none
            await driver.settled_drop(**fence, bucket=1, before=clock.now(), dead_before=clock.now())
    else:
        ((n, _, sealed_at),) = [(b.n, b.opened_at, b.sealed_at) for b in buckets]  # the open one only
        assert sealed_at is None
        assert await driver.settled_seal(**fence) == n
        after = [(b.n, b.opened_at, b.sealed_at) for b in await driver.settled_buckets(**fence)]
        assert after == [(n, buckets[0].opened_at, clock.now()), (n + 1, clock.now(), None)]  # oldest first
    assert await driver.job_get(job_id=done.id) == done  # sealed or not, read the same


async def test_a_settled_job_past_retention_goes_with_its_attempts_and_history_by_seal_drop_and_prune_on_either_driver(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    f = Factory(driver, ids, clock, lease_seconds=LEASE)
    t = clock.now()
    retried = ids.new()
    await f.insert(NewJob(retried, "send_email", "q", f"k:{retried}", {"n": 1}, 3))
    assert await f.nack(await f.claim(retried), "retry", run_at=t, error="X_BOOM: boom", error_code="X_BOOM")
    assert await f.complete(await f.claim(retried)) == [retried]
    cancelled = (await f.job(JobState.CANCELLED)).id
    dead = (await f.job(JobState.DEAD)).id
    gone = {retried, cancelled}
    for jid in gone:
        assert await driver.job_attempts(job_id=jid) or await driver.job_history(job_id=jid)
    term = await _lead(driver, clock)
    fence: dict[str, Any] = {"leader": NAME, "holder": "m", "term": term}
    clock.advance(60)
    sealed = await driver.settled_seal(**fence, now=clock.now())
    assert (sealed is None) == (driver.kind == "memory")
    clock.advance(60)
    # Not yet past retention (every row finished at t, none before it): nothing dropped or pruned.
    window: dict[str, Any] = {"now": clock.now(), "before": t, "dead_before": t}
    if sealed is not None:
        assert await driver.settled_drop(**fence, bucket=sealed, **window) is None
    assert await driver.job_prune(**fence, **window, limit=100) == []
    # Past the retention of completed and cancelled rows, not past the dead letter's.
    window = {"now": clock.now(), "before": t + timedelta(seconds=1), "dead_before": t}
    dropped = 0
    for b in await driver.settled_buckets(**fence, now=clock.now()):
        if b.sealed_at is not None:
            dropped += await driver.settled_drop(**fence, bucket=b.n, **window) or 0
    pruned = set(await driver.job_prune(**fence, **window, limit=100))
    assert (dropped, pruned) == ((0, gone) if driver.kind == "memory" else (2, set()))
    for jid in gone:
        assert await driver.job_get(job_id=jid) is None
        assert await driver.job_attempts(job_id=jid) == [] and await driver.job_history(job_id=jid) == []
    row = await driver.job_get(job_id=dead)
    assert row is not None and row.state is JobState.DEAD  # kept: within its own retention
    assert await driver.job_attempts(job_id=dead)


async def test_index_sizes_name_the_gins_of_the_jobs_tables_on_postgres_and_none_on_memory(
    driver: Driver, clock: FakeClock
) -> None:
    term = await _lead(driver, clock)
    fence: dict[str, Any] = {"leader": NAME, "holder": "m", "term": term, "now": clock.now()}
    sizes = await driver.index_sizes(**fence)
    if driver.kind == "memory":
        assert sizes == []
        with pytest.raises(JobsError, match="X_INVALID_ARGUMENT"):  # index_sizes lists none
            await driver.index_rebuild(**fence, index="jobs.job_live_input", before=0)
        return
    names = [s.index for s in sizes]
    assert names == sorted(names) and {"jobs.job_live_input", "jobs.job_list_input", "jobs.job_awaited"} <= set(names)
    assert all(s.baseline == s.bytes > 0 for s in sizes)  # seen for the first time: its size now
    live = next(s for s in sizes if s.index == "jobs.job_live_input")
    rebuilt = await driver.index_rebuild(**fence, index=live.index, before=live.bytes)
    assert rebuilt is not None
    assert (rebuilt.index, rebuilt.before, rebuilt.after > 0, rebuilt.seconds >= 0) == (
        live.index,
        live.bytes,
        True,
        True,
    )
    again = {s.index: s for s in await driver.index_sizes(**fence)}
    assert again[live.index].baseline == rebuilt.after  # its size after the rebuild is its new baseline


async def test_table_rows_name_the_tables_of_the_jobs_schema_on_postgres_and_none_on_memory(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    await Factory(driver, ids, clock).job(JobState.COMPLETED)
    term = await _lead(driver, clock)
    tables = await driver.table_rows(leader=NAME, holder="m", term=term, now=clock.now())
    if driver.kind == "memory":
        assert tables == []
        with pytest.raises(JobsError, match="X_INVALID_ARGUMENT"):  # table_rows lists none
            await driver.table_vacuum(table="jobs.job")
        return
    names = [t.table for t in tables]
    assert names == sorted(names) and all(n.startswith("jobs.") for n in names)
    assert {"jobs.job", "jobs.job_done", "jobs.job_done_now", "jobs.attempt", "jobs.leader"} <= set(names)
    assert all(t.owned and t.live >= 0 and t.dead >= 0 for t in tables)  # the schema's owner runs the suite
    assert await driver.table_vacuum(table="jobs.job") >= 0.0
