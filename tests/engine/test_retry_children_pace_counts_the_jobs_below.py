"""A paced bulk retry with children counts every job it brings back, those below each match
included: at one job a second, a dead fan-in retried with the three dead jobs below it waits four
seconds before the next match."""

from __future__ import annotations

import asyncio

from engine.actions import Operator
from engine.api import Engine
from engine.clock import FakeClock
from engine.projections import JobFilter
from engine.types import JobState
from tests.engine.test_retry_children import FAULT, Q, eng, failed_tree, faulty

__all__ = ["eng", "faulty"]  # the fixtures this module uses, from the module that defines the trees


async def test_a_paced_retry_with_children_counts_the_jobs_below_each_match_in_its_pace(
    eng: Engine, clock: FakeClock
) -> None:
    for k in ("p1", "p2"):
        await failed_tree(eng, clock, k)
    FAULT["on"] = False
    roots = JobFilter(queue=Q, state=JobState.DEAD)  # the fan-ins at the top only; the rest come with them
    paced = FakeClock(clock.now())  # the bulk's own clock: its pace the only sleeper on it
    gen = Operator(eng, clock=paced, actor="alice").retry_all_with_children(roots, per_second=1)
    got = [await anext(gen)]
    for _ in range(2):  # after each match its pace: the first before the second match, the second before the end
        nxt = asyncio.ensure_future(anext(gen, None))
        while paced.sleepers == 0 and not nxt.done():
            await asyncio.sleep(0)
        assert not nxt.done()  # unpaced, the next answer would have come at once
        assert paced.wake_next() == 4.0  # the root and the three jobs below it, at one a second
        if (res := await nxt) is not None:
            got.append(res)
    assert [(r.changed, len([a for a in r.also if a.changed])) for r in got] == [(True, 3), (True, 3)]
