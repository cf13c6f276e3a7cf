"""A one-line bar of counts by state. Labels carry the meaning, colour only helps (NO_COLOR)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from console import palette
from console.widgets.fresh import update_changed


def state_style(state: str) -> str:
    """The style of a state's word or count (console/palette.py: colour, or attributes only)."""
    return palette.style(state) if state in palette.STATES else ""


def state_text(state: str) -> Text:
    return Text(state, style=state_style(state))


def counts_text(counts: Sequence[tuple[str, object]]) -> Text:
    """``ready 12 · delayed 3 · dead 1``: a state whose count is zero is shown dim."""
    out = Text()
    for i, (state, count) in enumerate(counts):
        if i:
            out.append(" · ", style="dim")
        zero = str(count) in ("0", "~0", "≥0")
        out.append(f"{state} ", style=palette.style("zero") if zero else "")
        out.append(str(count), style=palette.style("zero") if zero else (state_style(state) or "bold"))
    return out


class StateBar(Static):
    """Totals across queues; ``counts`` is set by the screen that owns it."""

    def show(self, counts: Sequence[tuple[str, object]], *, note: str | None = None) -> None:
        text = counts_text(counts)
        if note:
            text.append(f"   {note}", style="italic dim")
        update_changed(self, text)
