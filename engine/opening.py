"""The one place a driver is opened: once per (driver, event loop), whoever asks first.

The Engine, the Operator and the Introspector share a driver; each used to keep its own "opened
on this loop" set, so one driver was opened (its schema checked) once per holder. Loops are held
weakly: a loop that is gone drops out, so a new loop at the same address is opened again.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

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
