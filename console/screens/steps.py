"""Choosing the step a retry-from-step starts at."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from console.format import clean
from console.screens.modal import AnswerOnce


class StepChooser(AnswerOnce, ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, steps: Sequence[str]) -> None:
        super().__init__()
        self.steps = list(steps)

    def compose(self) -> ComposeResult:
        with Vertical(id="steps-box"):
            yield Label(Text("Retry from which step? (Enter chooses, Escape leaves it)", style="bold"))
            yield OptionList(
                *(Option(Text(f"{i + 1}. {clean(s, limit=60)}"), id=f"s{i}") for i, s in enumerate(self.steps)),
                id="steps-list",
            )

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self.steps[event.option_index])

    def action_cancel(self) -> None:
        self.dismiss(None)
