"""The footer, without the leak of Textual's own (8.2.8).

Footer rebuilds its keys (recompose) on every change of the bindings, and each FooterKey binds
its ``compact`` to the footer's (``data_bind``): the footer's watcher list keeps every removed
key alive until ``compact`` next changes, which is never. Each screen switch or job-state change
left a footer's worth of dead keys behind. After each rebuild, drop the watchers of keys that
are gone.
"""

from __future__ import annotations

from typing import Any

from textual.widgets import Footer


class ConsoleFooter(Footer):
    async def recompose(self) -> None:
        await super().recompose()
        watchers: dict[str, list[tuple[Any, Any]]] = getattr(self, "__watchers", {})
        for entries in watchers.values():
            entries[:] = [(node, cb) for node, cb in entries if node is self or node.is_attached]
