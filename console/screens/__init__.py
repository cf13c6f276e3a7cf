"""One screen per file. MODES are the screens reachable from anywhere (the number keys, the
action table's NAV); the others are pushed on top of them (job detail, why, help, the modals).

Each mode is a factory that imports its screen's module on first use: opening the console draws
the Overview without paying for the imports of the screens not shown yet.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from textual.screen import Screen

_SCREENS = {
    "overview": ("console.screens.overview", "OverviewScreen"),
    "jobs": ("console.screens.jobs", "JobsScreen"),
    "dead_letters": ("console.screens.dead_letters", "DeadLettersScreen"),
    "workers": ("console.screens.workers", "WorkersScreen"),
    "schedules": ("console.screens.schedules", "SchedulesScreen"),
    "outbox": ("console.screens.outbox", "OutboxScreen"),
    "backfills": ("console.screens.backfills", "BackfillsScreen"),
}


# The screens pushed on top of a mode (a ``Navigate`` message names one of these kinds).
PUSHED = {
    "jobs": ("console.screens.jobs", "JobsScreen"),
    "job": ("console.screens.job_detail", "JobDetailScreen"),
    "why": ("console.screens.why", "WhyScreen"),
    "chart": ("console.screens.chart", "ChartScreen"),
    "logs": ("console.screens.logs", "LogsScreen"),
    "activity": ("console.screens.activity", "ActivityScreen"),
    "help": ("console.screens.help", "HelpScreen"),
}


def screen_class(mode: str) -> type[Screen[None]]:
    module, name = _SCREENS[mode] if mode in _SCREENS else PUSHED[mode]
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def _factory(mode: str) -> Callable[[], Screen[None]]:
    def make() -> Screen[None]:
        return screen_class(mode)()

    make.__name__ = f"make_{mode}_screen"
    return make


MODES: dict[str, str | Callable[[], Screen[Any]]] = {mode: _factory(mode) for mode in _SCREENS}
