"""The Source's backfills (console/source.py composes one): the application's declared backfills,
read as the Backfills screen's board, and the one control per environment their actions go
through (engine.backfills' BackfillControl).

It imports nothing of the engine: the Source, the console's one door, hands it the catalog, this
console's environment and how to build an environment's control, and puts its reads under the
Source's budget and its actions behind the Source's read-only check.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from console.backfills_board import BackfillsBoard

BACKFILL_HISTORY = 20  # ledger rows kept per backfill and environment


class SourceBackfills:
    def __init__(self, catalog: Any, environment: str, build: Callable[[str], Any]) -> None:
        self.catalog = catalog  # engine.backfills.Catalog, or None: the app declared none
        self.environment = environment  # this console's
        self._build = build  # an environment's BackfillControl, as the Source builds it now
        self._controls: dict[str, Any] = {}

    def control(self, environment: str) -> Any:
        """The environment's BackfillControl, built once (and again after ``forget``)."""
        control = self._controls.get(environment)
        if control is None:
            control = self._controls[environment] = self._build(environment)
        return control

    def forget(self) -> None:
        """Drop the controls built so far: the next are built as the Source is now (read-only)."""
        self._controls.clear()

    async def board(self, app: str | None) -> BackfillsBoard:
        """Every declared backfill in each environment it names (and this console's): status, live
        progress, the gate a write pass meets now, and its ledger history. ``app``: the module the
        catalog was loaded from, if the console loaded it."""
        catalog = self.catalog
        if catalog is None:
            return BackfillsBoard(self.environment, app, 0)
        envs = {d.backfill: _environments(d, self.environment) for d in catalog}
        rows: dict[tuple[str, str], Any] = {}
        history: dict[tuple[str, str], list[Any]] = {}
        for env in dict.fromkeys(e for names in envs.values() for e in names):
            control = self.control(env)
            rows.update(((v.name, env), v) for v in await control.views() if env in envs[v.name])
            for run in await control.history(limit=BACKFILL_HISTORY * len(catalog)):
                history.setdefault((run.name, env), []).append(run)
        ordered = [rows[(n, e)] for n in catalog.names() for e in envs[n]]
        return BackfillsBoard(self.environment, app, len(catalog), ordered, history)


def _environments(d: Any, own: str) -> list[str]:
    """The environments a backfill is shown in: this console's first, then each it declares."""
    return list(dict.fromkeys([own, *d.environments]))
