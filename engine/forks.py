"""What a forked child does with what the engine opened in its parent.

An application server that imports the app before it forks its workers (gunicorn's ``--preload``,
uWSGI without ``lazy-apps``, a ``multiprocessing`` pool on Linux's default start method) hands
each child the parent's engine: its private event loop, whose thread does not exist in the child
(a call on it would wait for ever), and its connections, whose sockets the child shares with the
parent (a statement from both would interleave on one session; a close from the child would send
PostgreSQL its Terminate on the parent's socket).

So, right after a fork, in the child, every holder of per-process state hands over what it held
and starts empty: the child's first call opens a loop and connections of its own. What was handed
over is kept referenced for the child's life, never used and never closed: closing the parent's
loop would unregister the parent's wake-up pipe from the epoll instance both processes share, and
psycopg finalises a connection inherited across a fork without a word to the server.
"""

from __future__ import annotations

import os
import weakref
from typing import Any, Protocol


class PerProcess(Protocol):
    def forsake(self) -> list[Any]:
        """In a forked child: forget what the parent opened and start empty; return what was
        held (kept alive, never used)."""
        ...


_holders: weakref.WeakSet[Any] = weakref.WeakSet()  # every object with per-process state
_inherited: list[Any] = []  # a child's: what its parent opened, never used


def per_process(holder: PerProcess) -> None:
    """Note an object whose state belongs to the process that made it (loops, pools, sessions)."""
    _holders.add(holder)


def _after_fork_in_child() -> None:
    for holder in list(_holders):
        _inherited.extend(holder.forsake())


os.register_at_fork(after_in_child=_after_fork_in_child)
