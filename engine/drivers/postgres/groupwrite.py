"""Group commit for one event loop's small writes (the step store's): a write that finds no
statement in flight goes out at once; writes that arrive while one is in flight go out together
in the next statement. Each caller waits for its own write to land and gets its own answer, so
a step's result is still stored before the step returns (I9); only the round trips are shared.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Any

from engine.drivers.transient import is_connection_error

GROUP_MAX = 500  # rows in one statement at most

Write = Callable[[list[Any]], Awaitable[set[Hashable]]]  # rows -> the keys of the rows written


class GroupWriter:
    def __init__(self, write: Write) -> None:
        self._write = write
        self._waiting: list[tuple[Hashable, Any, asyncio.Future[bool]]] = []
        self._task: asyncio.Task[None] | None = None

    async def write(self, key: Hashable, row: Any) -> bool:
        """Write ``row`` (``key`` names it in the statement's answer); True when it was written."""
        fut: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiting.append((key, row, fut))
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._drain())
            self._task.add_done_callback(self._drained)
        return await fut

    def _drained(self, task: asyncio.Task[None]) -> None:
        self._task = None
        if task.cancelled():  # cancelled with its loop, maybe before it ran: nobody may wait forever
            for _, _, fut in self._waiting:
                fut.cancel()
            self._waiting = []
        elif self._waiting:  # came in after the last group left, while this task was finishing
            self._task = task.get_loop().create_task(self._drain())
            self._task.add_done_callback(self._drained)

    async def _drain(self) -> None:
        while self._waiting:
            group: list[tuple[Hashable, Any, asyncio.Future[bool]]] = []
            keys: set[Hashable] = set()
            later: list[tuple[Hashable, Any, asyncio.Future[bool]]] = []
            for item in self._waiting:
                # One row per key and statement: ON CONFLICT cannot touch one row twice.
                if item[0] in keys or len(group) >= GROUP_MAX:
                    later.append(item)
                else:
                    keys.add(item[0])
                    group.append(item)
            self._waiting = later
            try:
                await self._commit(group)
            except BaseException:
                for _, _, fut in group:
                    fut.cancel()
                raise

    async def _commit(self, group: list[tuple[Hashable, Any, asyncio.Future[bool]]]) -> None:
        try:
            written = await self._write([row for _, row, _ in group])
        except Exception as exc:
            if len(group) > 1 and not is_connection_error(exc):
                for item in group:  # one row at fault must not fail the others' writes
                    await self._commit([item])
                return
            for _, _, fut in group:  # the connection failed under every row alike
                if not fut.done():
                    fut.set_exception(exc)
            return
        for key, _, fut in group:
            if not fut.done():
                fut.set_result(key in written)
