"""The footer: Textual's own (8.2.8), fitted to its width, with keys of its own.

Fitted: Textual's footer lays every key out in a row and the terminal cuts whatever passes the
right edge, at 80 columns in the middle of a key. This one shows the keys in the order it is
given, most needed first, and leaves out those that do not fit; the first key (help) is never
left out, and reads "More keys" while any is, so a key missing here is one press away. The
command palette key keeps its place on the right. The fit is worked out again when the bindings
change and when a resize changes which keys fit, never on a refresh that changes neither.

The keys: Textual draws its footer's keys with a widget it does not export (textual.widgets
._footer.FooterKey), so the console draws them with ``FooterKey`` below, which looks and acts the
same (Footer's own styles name it by its class name). Its compact look is fixed when the footer
builds it: binding it to the footer's ``compact`` (``data_bind``, as Textual's footer does) left
every rebuilt key alive in the footer's watcher list until ``compact`` next changed, which is
never.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widget import Widget
from textual.widgets import Footer

Shown = tuple[Binding, bool, str]  # a binding, whether it is enabled, its tooltip


class FooterKey(Widget):
    """One key of the footer: " key description ", dim when disabled; a click presses the key."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"footer-key--key", "footer-key--description"}
    DEFAULT_CSS = """
    FooterKey {
        width: auto;
        height: 1;
        text-wrap: nowrap;
        background: $footer-item-background;
        .footer-key--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
            padding: 0 1;
        }
        .footer-key--description {
            padding: 0 1 0 0;
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        &:hover {
            pointer: pointer;
            color: $footer-key-foreground;
            background: $block-hover-background;
        }
        &.-disabled {
            text-style: dim;
        }
        &.-compact {
            .footer-key--key {
                padding: 0;
            }
            .footer-key--description {
                padding: 0 0 0 1;
            }
        }
    }
    """

    def __init__(
        self,
        key: str,
        key_display: str,
        description: str,
        action: str,
        *,
        compact: bool,
        disabled: bool = False,
        tooltip: str = "",
        classes: str = "",
    ) -> None:
        super().__init__(classes=" ".join([classes, "-compact" if compact else "", "-disabled" if disabled else ""]))
        self.key, self.key_display, self.description, self.action = key, key_display, description, action
        self._disabled = disabled
        self.set_reactive(Widget.shrink, False)
        if tooltip:
            self.tooltip = tooltip

    def render(self) -> Text:
        key_padding = self.get_component_styles("footer-key--key").padding
        description_padding = self.get_component_styles("footer-key--description").padding
        text = Text.assemble(
            (
                " " * key_padding.left + self.key_display + " " * key_padding.right,
                self.get_component_rich_style("footer-key--key"),
            )
        )
        if self.description:
            text.append(
                " " * description_padding.left + self.description + " " * description_padding.right,
                self.get_component_rich_style("footer-key--description"),
            )
        text.stylize_before(self.rich_style)
        return text

    def on_mouse_down(self) -> None:
        if self._disabled:
            self.app.bell()
        else:
            self.app.simulate_key(self.key)


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
                compact=self.compact,
                disabled=not enabled,
                tooltip=tooltip,
            )
        palette = self._palette()
        if palette is not None:
            binding, enabled, tooltip = palette
            yield FooterKey(
                binding.key,
                self.app.get_key_display(binding),
                binding.description,
                binding.action,
                classes="-command-palette",
                compact=True,  # as Textual's footer draws it: "^p palette", the key unpadded
                disabled=not enabled,
                tooltip=tooltip or binding.description,
            )

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
