"""The leader's physical upkeep given a bucket, index or table its own listing does not give
(settled_buckets, index_sizes, table_rows): on both drivers the project's X_INVALID_ARGUMENT,
naming the bad name and the listing that gives the good ones, never a driver's own exception. A
caller not at the leader's term still gets None from the fenced ones, as for any name; a name
outside the jobs schema is refused before anything is asked (on PostgreSQL it would otherwise be
found along the search path: an app's own table or index)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import X_INVALID_ARGUMENT, JobsError

NAME = "maintenance"


async def _fence(driver: Driver, clock: FakeClock) -> dict[str, Any]:
    term = await driver.leader_acquire(name=NAME, holder="m", now=clock.now(), lease_seconds=3600)
    assert term is not None
    return {"leader": NAME, "holder": "m", "term": term, "now": clock.now()}


# The fix is the same on both drivers: the call, with a name its listing gives.
FIX = {
    "table_rows()": "table_vacuum(table=t.table) for a t of table_rows(...)",
    "index_sizes()": "index_rebuild(..., index=s.index, before=s.bytes) for an s of index_sizes(...)",
    "settled_buckets()": "settled_drop(..., bucket=b.n) for a b of settled_buckets(...) with a sealed_at",
}


def _refusal(err: pytest.ExceptionInfo[JobsError], name: object, listing: str) -> None:
    e = err.value
    assert type(e) is JobsError and e.code == X_INVALID_ARGUMENT, repr(e)
    assert repr(name) in e.cause and listing in e.cause, e.cause
    assert e.fix == FIX[listing], e.fix


@pytest.mark.parametrize("table", ["jobs.no_such_table", "job", "public.job", "jobs."])
async def test_a_vacuum_of_a_table_table_rows_does_not_list_is_refused_naming_it_and_the_listing(
    driver: Driver, table: str
) -> None:
    with pytest.raises(JobsError) as err:
        await driver.table_vacuum(table=table)
    _refusal(err, table, "table_rows()")


@pytest.mark.parametrize("index", ["jobs.no_such_index", "jobs.job", "job_live_input", "public.job_live_input"])
async def test_a_rebuild_of_an_index_index_sizes_does_not_list_is_refused_naming_it_and_the_listing(
    driver: Driver, clock: FakeClock, index: str
) -> None:
    fence = await _fence(driver, clock)
    with pytest.raises(JobsError) as err:
        await driver.index_rebuild(**fence, index=index, before=0)
    _refusal(err, index, "index_sizes()")


async def test_a_drop_of_a_bucket_settled_buckets_does_not_list_as_sealed_is_refused_naming_it_and_the_listing(
    driver: Driver, clock: FakeClock
) -> None:
    fence = await _fence(driver, clock)
    listed = await driver.settled_buckets(**fence)
    window: dict[str, Any] = {"before": clock.now() + timedelta(days=1), "dead_before": clock.now() + timedelta(days=1)}
    for bucket in {10**9, -1, *(b.n for b in listed if b.sealed_at is None)}:  # the open one is not sealed
        with pytest.raises(JobsError) as err:
            await driver.settled_drop(**fence, bucket=bucket, **window)
        _refusal(err, bucket, "settled_buckets()")
    assert await driver.settled_buckets(**fence) == listed  # nothing dropped


async def test_a_caller_not_at_the_leaders_term_gets_none_for_any_index_or_bucket_as_before(
    driver: Driver, clock: FakeClock
) -> None:
    fence = {**await _fence(driver, clock), "holder": "other"}
    window: dict[str, Any] = {"before": clock.now(), "dead_before": clock.now()}
    assert await driver.index_rebuild(**fence, index="jobs.no_such_index", before=0) is None
    assert await driver.settled_drop(**fence, bucket=10**9, **window) is None
