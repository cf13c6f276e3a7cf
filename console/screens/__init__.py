"""One screen per file. MODES are the screens reachable from anywhere (keys 1-4, the action
table's NAV); the others are pushed on top of them (job detail, why, help, the modals)."""

from __future__ import annotations

from console.screens.dead_letters import DeadLettersScreen
from console.screens.jobs import JobsScreen
from console.screens.overview import OverviewScreen
from console.screens.workers import WorkersScreen

MODES = {
    "overview": OverviewScreen,
    "jobs": JobsScreen,
    "dead_letters": DeadLettersScreen,
    "workers": WorkersScreen,
}
