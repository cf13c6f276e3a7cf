"""MemoryDriver: the Driver protocol on plain collections, for tests, the demo and an app's dev loop.

One class per area (engine/drivers/base.py, AREAS), each on MemoryBase (the typed tables of
state.py and the wake-up the SQL sends); no area overrides or calls another's members, so the
order of the bases here means nothing.
"""

from __future__ import annotations

from engine.drivers.memory.actions import MemoryActions
from engine.drivers.memory.audit import MemoryAudit
from engine.drivers.memory.backfills import MemoryBackfills
from engine.drivers.memory.introspect import MemoryIntrospect
from engine.drivers.memory.jobs import MemoryJobs
from engine.drivers.memory.limits import MemoryLimits
from engine.drivers.memory.maintenance import MemoryMaintenance
from engine.drivers.memory.outbox import MemoryOutbox, MemoryTransaction
from engine.drivers.memory.schedules import MemorySchedules
from engine.drivers.memory.state import MemoryBase
from engine.drivers.memory.steps import MemorySteps
from engine.drivers.memory.workers import MemoryWorkers


class MemoryDriver(
    MemoryJobs,
    MemoryWorkers,
    MemoryLimits,
    MemoryMaintenance,
    MemorySteps,
    MemoryIntrospect,
    MemoryActions,
    MemoryBackfills,
    MemoryOutbox,
    MemorySchedules,
    MemoryAudit,
):
    kind = "memory"

    def __init__(self) -> None:
        MemoryBase.__init__(self)

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def reset(self) -> None:
        return None  # no connection to drop

    def describe(self) -> str:
        return "memory"


__all__ = ["MemoryDriver", "MemoryTransaction"]
