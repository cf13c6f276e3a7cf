"""Group commit of one loop's small writes (the step store's), on a writer that records its calls."""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from typing import Any

import psycopg
import pytest

from engine.drivers.postgres.groupwrite import GroupWriter


class Recorder:
    def __init__(self, refuse: set[str] = frozenset(), bad: set[str] = frozenset(), down: bool = False) -> None:  # type: ignore[assignment]
        self.calls: list[list[str]] = []
        self.refuse, self.bad, self.down = refuse, bad, down
        self.gate = asyncio.Event()
        self.gate.set()
        self.entered = asyncio.Event()

    async def write(self, rows: list[Any]) -> set[Hashable]:
        self.calls.append([r["key"] for r in rows])
        self.entered.set()
        await self.gate.wait()
        if self.down:
            raise psycopg.OperationalError("server closed the connection")
        if any(r["key"] in self.bad for r in rows):
            raise psycopg.errors.UntranslatableCharacter("unsupported Unicode escape sequence")
        return {r["key"] for r in rows if r["key"] not in self.refuse}


async def test_a_lone_write_goes_out_at_once_and_the_ones_behind_it_share_the_next_statement() -> None:
    rec = Recorder()
    w = GroupWriter(rec.write)
    rec.gate.clear()  # hold the first statement on the wire
    first = asyncio.ensure_future(w.write("a", {"key": "a"}))
    await rec.entered.wait()
    assert rec.calls == [["a"]]
    rest = [asyncio.ensure_future(w.write(k, {"key": k})) for k in "bcd"]
    await asyncio.sleep(0)  # one turn of the loop: the three writes are queued behind the first
    assert len(w._waiting) == 3 and rec.calls == [["a"]]  # nothing else leaves while one is in flight
    rec.gate.set()
    assert await asyncio.gather(first, *rest) == [True, True, True, True]
    assert rec.calls == [["a"], ["b", "c", "d"]]


async def test_each_write_gets_its_own_answer_within_a_group() -> None:
    rec = Recorder(refuse={"stale"})
    w = GroupWriter(rec.write)
    got = await asyncio.gather(*(w.write(k, {"key": k}) for k in ("x", "stale", "y")))
    assert got == [True, False, True]


async def test_one_key_twice_goes_out_in_two_statements() -> None:
    rec = Recorder()
    w = GroupWriter(rec.write)
    rec.gate.clear()
    first = asyncio.ensure_future(w.write("k0", {"key": "k0"}))
    await rec.entered.wait()
    again = [asyncio.ensure_future(w.write(k, {"key": k})) for k in ("k1", "k2", "k1")]
    rec.gate.set()
    assert await asyncio.gather(first, *again) == [True] * 4
    assert rec.calls == [["k0"], ["k1", "k2"], ["k1"]]  # ON CONFLICT may not touch one row twice


async def test_a_row_at_fault_fails_alone_and_a_lost_connection_fails_the_group() -> None:
    rec = Recorder(bad={"bad"})
    w = GroupWriter(rec.write)
    got = await asyncio.gather(*(w.write(k, {"key": k}) for k in ("p", "bad", "q")), return_exceptions=True)
    assert got[0] is True and got[2] is True and isinstance(got[1], psycopg.errors.UntranslatableCharacter)
    assert rec.calls[0] == ["p", "bad", "q"] and sorted(rec.calls[1:]) == [["bad"], ["p"], ["q"]]
    down = Recorder(down=True)
    w = GroupWriter(down.write)
    lost = await asyncio.gather(*(w.write(k, {"key": k}) for k in "mn"), return_exceptions=True)
    assert all(isinstance(x, psycopg.OperationalError) for x in lost) and down.calls == [["m", "n"]]


@pytest.mark.parametrize("when", ["before it ran", "on the wire"])
async def test_a_cancelled_group_leaves_no_writer_waiting(when: str) -> None:
    rec = Recorder()
    w = GroupWriter(rec.write)
    rec.gate.clear()
    waiting = [asyncio.ensure_future(w.write(k, {"key": k})) for k in "ab"]
    await asyncio.sleep(0)  # one turn: both writes queued, the group's task made
    assert w._task is not None
    if when == "on the wire":
        await rec.entered.wait()
    w._task.cancel()
    for fut in waiting:
        with pytest.raises(asyncio.CancelledError):
            await fut
    assert w._task is None and w._waiting == []


async def test_a_write_right_after_a_group_lands_is_not_left_behind() -> None:
    # The caller of the last group resumes before the group's task has finished: its next write
    # finds a task that is already done draining, and must still go out.
    rec = Recorder()
    w = GroupWriter(rec.write)

    async def one_after_another() -> list[bool]:
        return [await w.write(k, {"key": k}) for k in "abc"]  # each awaited in this very task

    assert await asyncio.wait_for(one_after_another(), timeout=5) == [True, True, True]
    assert rec.calls == [["a"], ["b"], ["c"]]
