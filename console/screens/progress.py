"""What a long action is doing while it runs: a bulk action batch by batch, a retry with children
job by job, an action on marked rows row by row.

It holds the screen under it while the action runs: a key there could start another action or
leave the screen, either of which would end this one part-way without a word. It shows the running
totals and offers a stop: ``s`` or Escape ends the action between two batches (or jobs), never
within one, and the result then says what landed.
"""

from __future__ import annotations

import asyncio

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from console.format import clean
from console.screens.modal import AnswerOnce, withdraw

STOPPING = "Stopping after the batch in flight: what landed stays, nothing more changes."


class ProgressScreen(AnswerOnce, ModalScreen[None]):
    BINDINGS = [Binding("s,escape", "stop", "Stop")]

    def __init__(self, title: str) -> None:
        super().__init__()
        self.title_text = title
        self.stop = asyncio.Event()  # set by the operator; the action looks at it between batches
        self.said = "Starting…"

    def compose(self) -> ComposeResult:
        with Vertical(id="progress-box"):
            yield Label(Text(clean(self.title_text, limit=100), style="bold"), id="progress-title")
            yield Static(self._text(), id="progress-text")
            yield Button(Text("Stop [s]"), id="progress-stop", compact=True)

    def on_mount(self) -> None:
        for stop in self.query("#progress-stop").results(Button):
            stop.focus()

    def _text(self) -> Text:
        t = Text(self.said)
        if self.stop.is_set():
            t.append(f"\n{STOPPING}", style="bold")
        return t

    def show(self, said: str) -> None:
        """The running totals, as the action tells them."""
        self.said = said
        for text in self.query("#progress-text").results(Static):
            text.update(self._text())

    def action_stop(self) -> None:
        if self.stop.is_set():
            return
        self.stop.set()
        self.show(self.said)
        for stop in self.query("#progress-stop").results(Button):
            stop.label = Text("Stopping…")
            stop.disabled = True

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_stop()

    def close(self) -> None:
        """The action ended: gone, with whatever opened over it (the palette)."""
        withdraw(self)
