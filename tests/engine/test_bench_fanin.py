"""bench.fanin measures what it says: the lag is read from the database's own timestamps, from
the last child's finish to the parent's, and the parent's looks are its claims after its first run."""

from __future__ import annotations

import asyncio

from bench.fanin import fanout_ms, lag, look_ms
from engine.runtime.fanin import POLL_FIRST, POLL_SHARE


def test_bench_fanin_times_the_parent_after_its_last_child_and_counts_its_looks(pg_dsn: str) -> None:
    got = asyncio.run(lag(pg_dsn, children=4, span=0.6, run=0))
    assert got["span"] >= 0.6  # the last child sleeps the whole span after the wait began
    assert got["lag"] >= 0 and got["looks"] >= 1  # it suspended at least once: the first look found them live
    assert got["bound"] == max(POLL_FIRST, POLL_SHARE * got["span"])
    assert asyncio.run(look_ms(pg_dsn, 3, samples=3)) > 0


def test_bench_fanin_times_a_fan_out_step_both_ways_and_each_enqueues_its_jobs(pg_dsn: str) -> None:
    got = asyncio.run(fanout_ms(pg_dsn, 5, samples=2))  # asserts each step answered its 5 ids
    assert set(got) == {"enqueue", "run"} and all(ms > 0 for ms in got.values())
