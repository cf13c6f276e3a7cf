"""A one-line bar of counts by state. Labels carry the meaning, colour only helps (NO_COLOR)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from console import palette
from console.format import packed
from console.widgets.fresh import update_changed


def state_style(state: str) -> str:
    """The style of a state's word or count (console/palette.py: colour, or attributes only)."""
    return palette.style(state) if state in palette.STATES else ""


def state_text(state: str) -> Text:
    return Text(state, style=state_style(state))


def counts_text(counts: Sequence[tuple[str, object]], width: int = 0) -> Text:
    """``ready 12 · delayed 3 · dead 1``: a state whose count is zero is shown dim. Past ``width``
    cells it goes on to the next line between two counts, never between a state and its count."""
    parts: list[Text] = []
    for state, count in counts:
        zero = str(count) in ("0", "~0", "≥0")
        part = Text(f"{state} ", style=palette.style("zero") if zero else "")
        part.append(str(count), style=palette.style("zero") if zero else (state_style(state) or "bold"))
        parts.append(part)
    return packed(parts, width)


class StateBar(Static):
    """Totals across queues; ``counts`` is set by the screen that owns it. The notes (a paused
    queue, the fleet) start a line of their own, each whole."""

    def show(self, counts: Sequence[tuple[str, object]], *, notes: Sequence[str] = ()) -> None:
        width = max(0, self.app.size.width - 2)  # the bar spans the screen, less its padding
        text = counts_text(counts, width)
        if notes:
            text.append("\n")
            text.append_text(packed(notes, width, sep="   ", style="italic dim"))
        update_changed(self, text)
