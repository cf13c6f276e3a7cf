"""MemoryDriver: the Driver protocol on plain collections, for tests, the demo and an app's dev loop."""

from __future__ import annotations

from engine.drivers.memory.actions import MemoryActions
from engine.drivers.memory.introspect import MemoryIntrospect
from engine.drivers.memory.jobs import MemoryJobs
from engine.drivers.memory.state import MemoryState
from engine.drivers.memory.steps import MemorySteps


class MemoryDriver(MemoryJobs, MemoryIntrospect, MemoryActions, MemorySteps):
    kind = "memory"

    def __init__(self) -> None:
        self.state = MemoryState()

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    def describe(self) -> str:
        return "memory"


__all__ = ["MemoryDriver"]
