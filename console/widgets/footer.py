"""The footer: Textual's own (8.2.8), fitted to its width and without its leak.

Fitted: Textual's footer lays every key out in a row and the terminal cuts whatever passes the
right edge, at 80 columns in the middle of a key. This one shows the keys in the order it is
given, most needed first, and leaves out those that do not fit; the first key (help) is never
left out, and reads "More keys" while any is, so a key missing here is one press away. The
command palette key keeps its place on the right. The fit is worked out again when the bindings
change and when a resize changes which keys fit, never on a refresh that changes neither.

The leak: Footer rebuilds its keys (recompose) on every change of the bindings, and each FooterKey
binds its ``compact`` to the footer's (``data_bind``): the footer's watcher list keeps every
removed key alive until ``compact`` next changes, which is never. Each screen switch or job-state
change left a footer's worth of dead keys behind. After each rebuild, drop the watchers of keys
that are gone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.cells import cell_len
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer
from textual.widgets._footer import FooterKey  # not exported by textual.widgets (8.2.8)

Shown = tuple[Binding, bool, str]  # a binding, whether it is enabled, its tooltip


class ConsoleFooter(Footer):
    def __init__(self, order: Sequence[str] = (), *, more: str = "More keys") -> None:
        super().__init__()
        self.order = tuple(order)  # actions, most needed first; order[0] is never left out
        self.more = more
        self._fitted: tuple[str, ...] | None = None  # the actions the keys on show were fitted to

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        shown, left_out = self._fit(self._width())
        self._fitted = tuple(b.action for b, _, _ in shown)
        for binding, enabled, tooltip in shown:
            yield FooterKey(
                binding.key,
                self.app.get_key_display(binding),
                self._label(binding, left_out),
                binding.action,
                disabled=not enabled,
                tooltip=tooltip,
            ).data_bind(compact=Footer.compact)
        palette = self._palette()
        if palette is not None:
            binding, enabled, tooltip = palette
            yield FooterKey(
                binding.key,
                self.app.get_key_display(binding),
                binding.description,
                binding.action,
                classes="-command-palette",
                disabled=not enabled,
                tooltip=tooltip or binding.description,
            )

    async def recompose(self) -> None:
        await super().recompose()
        watchers: dict[str, list[tuple[Any, Any]]] = getattr(self, "__watchers", {})
        for entries in watchers.values():
            entries[:] = [(node, cb) for node, cb in entries if node is self or node.is_attached]

    def on_resize(self, event: events.Resize) -> None:
        if self._fitted is None:
            return
        shown, _ = self._fit(event.size.width)
        if tuple(b.action for b, _, _ in shown) != self._fitted:
            self.call_after_refresh(self.recompose)

    # --- the fit -----------------------------------------------------------------------------------

    def _width(self) -> int:
        return self.size.width or self.app.size.width

    def _offered(self) -> list[Shown]:
        """The screen's shown bindings, one per action (the first key bound to it), in ``order``;
        an action missing from it goes last, in Textual's order."""
        by_action: dict[str, Shown] = {}
        for _, binding, enabled, tooltip in self.screen.active_bindings.values():
            if binding.show and binding.action not in by_action:
                by_action[binding.action] = (binding, enabled, tooltip)
        rank = {action: i for i, action in enumerate(self.order)}
        return sorted(by_action.values(), key=lambda s: rank.get(s[0].action, len(rank)))

    def _palette(self) -> Shown | None:
        if not (self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE):
            return None
        active = self.screen.active_bindings.get(self.app.COMMAND_PALETTE_BINDING)
        return None if active is None else (active.binding, active.enabled, active.tooltip)

    def _fit(self, width: int) -> tuple[list[Shown], bool]:
        """The keys that fit in ``width``, in order, and whether any was left out."""
        offered = self._offered()
        palette = self._palette()
        room = width - (self._cells(palette[0], palette[0].description) if palette else 0)
        if sum(self._cells(b, b.description) for b, _, _ in offered) <= room:
            return offered, False
        shown: list[Shown] = []
        for entry in offered:
            binding = entry[0]
            kept = self._first(binding)
            cells = self._cells(binding, self.more if kept else binding.description)
            # A key that does not fit is skipped and the next ones are still tried: a short key
            # can take the room a long one left.
            if kept or cells <= room:
                shown.append(entry)
                room -= cells
        return shown, True

    def _first(self, binding: Binding) -> bool:
        return bool(self.order) and binding.action == self.order[0]

    def _label(self, binding: Binding, left_out: bool) -> str:
        return self.more if left_out and self._first(binding) else binding.description

    def _cells(self, binding: Binding, description: str) -> int:
        # As FooterKey draws a key in the footer's default (not compact) style: " key description ".
        return cell_len(self.app.get_key_display(binding)) + cell_len(description) + 3
