"""The one place a driver is opened: once per (driver, event loop), whoever asks first; and the
close an engine never closed gets at interpreter exit (ExitCloser).

The Engine, the Operator and the Introspector share a driver; each used to keep its own "opened
on this loop" set, so one driver was opened (its schema checked) once per holder. Loops are held
weakly: a loop that is gone drops out, so a new loop at the same address is opened again.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.drivers.base import Driver
    from engine.syncbridge import LoopThread

_opened: weakref.WeakKeyDictionary[Any, weakref.WeakSet[asyncio.AbstractEventLoop]] = weakref.WeakKeyDictionary()


async def ensure_open(driver: Any) -> None:
    """Open ``driver`` on the running loop unless it already was (a failed open is asked again)."""
    loop = asyncio.get_running_loop()
    loops = _opened.get(driver)
    if loops is None:
        loops = _opened[driver] = weakref.WeakSet()
    if loop not in loops:
        await driver.open()
        loops.add(loop)


def forget(driver: Any) -> None:
    """The driver was closed: the next use on any loop opens it again."""
    _opened.pop(driver, None)


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class ExitCloser:
    """Closes an engine's driver on the engine's own loop thread (where the sync calls opened
    their pools), then stops that thread."""

    def __init__(self, driver: Driver, bridge: LoopThread) -> None:
        self.driver, self.bridge = driver, bridge

    def __call__(self) -> None:
        forget(self.driver)
        if not self.bridge.started and not _loop_running():  # no sync call ran: no loop of its own to close on
            asyncio.run(self.driver.close())
            return
        try:
            self.bridge.run(self.driver.close())
        finally:
            self.bridge.stop()
