"""The cycle collector's youngest generation, sized for the jobs a worker keeps in flight.

CPython collects its youngest generation each time the container objects allocated, less those
freed, pass a threshold (700 by default). A job in flight keeps a few dozen of them alive (its
task and coroutines, row, claim, lease, context, input), so a worker with 200 slots fills that
generation with live objects several times a batch: each collection walks them, frees nothing and
moves them on to the older generations, whose collections then walk them again with everything
the process imported: a sixth of a draining worker's CPU (docs/internals.md, "The worker").

While a worker runs, the youngest generation's threshold is at least ``OBJECTS_PER_SLOT`` times
its slots (the largest of the running workers'); once none runs, the threshold the process had
before is back. A threshold the application sets meanwhile is the floor from then on and the one
restored; one of 0 (automatic collection off) is left as it is. ``WorkerConfig(tune_gc=False)``
leaves the collector alone.
"""

from __future__ import annotations

import gc
import threading

OBJECTS_PER_SLOT = 50  # container objects a job in flight keeps alive, with room to spare

_lock = threading.Lock()
_needs: list[int] = []  # one entry per running worker: the threshold its slots want
_base: int | None = None  # the process's threshold before the first running worker raised it
_applied: int | None = None  # what this module last set


def hold(slots: int) -> int:
    """A worker with ``slots`` starts: the youngest generation's threshold now. Pair with
    ``release(slots)``."""
    global _base
    with _lock:
        if not _needs:
            _base = gc.get_threshold()[0]
        _needs.append(OBJECTS_PER_SLOT * slots)
        return _apply()


def release(slots: int) -> int:
    """The worker that held with ``slots`` has stopped: the threshold now."""
    with _lock:
        _needs.remove(OBJECTS_PER_SLOT * slots)
        return _apply()


def _apply() -> int:
    global _base, _applied
    first, second, third = gc.get_threshold()
    if _applied is not None and first != _applied:
        _base = first  # the application set its own since: the floor from now on, and what comes back
    base = first if _base is None else _base
    # A threshold of 0 turns automatic collection off: the application's choice, left as it is.
    wanted = max(base, *_needs) if _needs and base else base
    if first != wanted:
        gc.set_threshold(wanted, second, third)
    _applied = wanted if _needs else None
    return wanted
