"""MemoryDriver: the Driver protocol on plain collections, for tests, the demo and an app's dev loop."""

from __future__ import annotations

from engine.drivers.memory.actions import MemoryActions
from engine.drivers.memory.introspect import MemoryIntrospect
from engine.drivers.memory.jobs import MemoryJobs
from engine.drivers.memory.limits import MemoryLimits
from engine.drivers.memory.maintenance import MemoryMaintenance
from engine.drivers.memory.schedules import MemorySchedules
from engine.drivers.memory.state import MemoryState
from engine.drivers.memory.steps import MemorySteps
from engine.drivers.memory.workers import MemoryWorkers


# MemoryWorkers first: its job_enqueue wraps MemoryJobs' to send the wake-up the SQL sends.
class MemoryDriver(
    MemoryWorkers,
    MemoryJobs,
    MemoryLimits,
    MemoryMaintenance,
    MemorySteps,
    MemoryIntrospect,
    MemoryActions,
    MemorySchedules,
):
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
