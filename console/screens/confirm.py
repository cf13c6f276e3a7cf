"""The confirmation modal every mutating action goes through.

It names exactly what will change (and, for a bulk action, how many jobs and how they group). The
operator may attach an incident note (kept in the job's audit trail) where the action keeps one
and, for a bulk retry, pace it (smaller batches with a pause between them) or, when fan-ins are
among its jobs, retry each with the dead jobs below it. ``y`` or the Confirm button confirms;
``n`` or Escape cancels; nothing is changed until then.

It fits an 80x24 terminal: the body scrolls, while the count, the options and the buttons stay
on screen, so focus never lands on something the operator cannot see. Enter in the note field
moves on to the buttons; it never confirms (a note typed in haste must not launch a bulk retry).
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.geometry import Size
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Checkbox, Input, Label, Static

from console.format import clean
from console.screens.modal import AnswerOnce
from engine.text import NOTE_MAX

# Said when the operator leaves a confirmation unanswered. Not "Cancelled": after "Cancel job …?"
# that word reads as the cancel having happened.
LEFT_ALONE = "Left as it was: nothing changed."
BOX_WIDTH = 90  # #confirm-box's width in app.tcss


class Tick(Checkbox):
    """A checkbox whose box is empty when it is off. Textual's draws an "X" either way and tells
    on from off by the X's colour alone: with NO_COLOR both read the same, and an "X" reads as
    ticked to anyone."""

    def render(self) -> Content:
        self.BUTTON_INNER = "X" if self.value else " "
        return super().render()

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        # Textual's checkbox is one line whatever its width: a label longer than the box was cut
        # (60 columns). This one wraps its label (app.tcss) and is as tall as the wrapped text.
        return Widget.get_content_height(self, container, viewport, width)


@dataclass(frozen=True)
class Confirmed:
    note: str | None = None
    paced: bool = False
    per_second: float | None = None
    children: bool = False  # the "with children" option, when offered, was ticked


class ConfirmScreen(AnswerOnce, ModalScreen[Confirmed | None]):
    BINDINGS = [
        Binding("y", "confirm", "Confirm"),
        # Not "Cancel": beside "Cancel job ... [y]" that word would name both answers.
        Binding("n", "cancel", "Leave it"),
        Binding("escape", "cancel", "Leave it"),
    ]

    def __init__(
        self,
        title: str,
        body: Text | str,
        *,
        verb: str = "Confirm",
        note: bool = True,
        pace: float | None = None,
        children: str | None = None,
        danger: bool = True,
    ) -> None:
        super().__init__()
        self.title_text = title
        self.body = body
        self.verb = verb
        self.with_note = note
        self.pace = pace  # the pacing rate offered (jobs per second), None: no pacing option
        self.with_children = children  # the "with children" option's label, None: not offered
        self.danger = danger

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box", classes="danger" if self.danger else ""):
            yield Label(Text(clean(self.title_text, limit=100), style="bold"), id="confirm-title")
            with VerticalScroll(id="confirm-body"):
                yield Static(self.body, id="confirm-text")
            if self.pace is not None:
                yield Tick(
                    f"pace it: at most {self.pace:g} jobs a second, with a pause between batches",
                    id="confirm-pace",
                    compact=True,
                )
            if self.with_children is not None:
                yield Tick(clean(self.with_children, limit=80), id="confirm-children", compact=True)
            if self.with_note:
                yield Input(
                    placeholder="incident note for the audit trail (optional)",
                    id="confirm-note",
                    max_length=NOTE_MAX,  # what the engine keeps: a longer note is refused
                    compact=True,
                )
            with Horizontal(id="confirm-buttons"):
                yield Button(
                    Text(f"{clean(self.verb, limit=40)} [y]"),
                    id="confirm-yes",
                    variant="error" if self.danger else "primary",
                    compact=True,
                )
                yield Button(Text("Leave it [n]"), id="confirm-no", compact=True)

    def on_mount(self) -> None:
        # Answered already (a key typed as it opened dismissed it): its widgets are gone.
        for no in self.query("#confirm-no").results(Button):
            no.focus()
        self._fit(self.size.height)

    def on_resize(self, event: events.Resize) -> None:
        self._fit(event.size.height)

    def _fit(self, height: int) -> None:
        """Give the body what the screen has left once the title, options and buttons are placed
        (each a margin and its rows: one, or an option's label as it wraps in the box; the box's
        border two rows)."""
        inner = max(1, min(BOX_WIDTH, self.size.width or self.app.size.width) - 4)  # less border and padding
        size = Size(inner, height)
        ticks = sum(1 + tick.get_content_height(size, size, inner) for tick in self.query(Tick))
        fixed = 2 + ticks + 2 * self.with_note + 2
        for body in self.query("#confirm-body").results(VerticalScroll):
            body.styles.max_height = max(2, height - fixed - 2)

    def _result(self) -> Confirmed:
        note = None
        if self.with_note:
            note = self.query_one("#confirm-note", Input).value.strip() or None
        paced = self.pace is not None and self.query_one("#confirm-pace", Checkbox).value
        children = self.with_children is not None and self.query_one("#confirm-children", Checkbox).value
        return Confirmed(note=note, paced=paced, per_second=self.pace if paced else None, children=children)

    def action_confirm(self) -> None:
        self.dismiss(self._result())

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "confirm-yes":
            self.action_confirm()
        else:
            self.action_cancel()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one("#confirm-no", Button).focus()


class ResultScreen(AnswerOnce, ModalScreen[None]):
    """What an action did, shown until dismissed (any of Enter, Escape, o)."""

    BINDINGS = [Binding("escape,enter,o", "close", "OK")]

    def __init__(self, title: str, body: Text | str, *, failed: bool = False) -> None:
        super().__init__()
        self.title_text, self.body, self.failed = title, body, failed

    def compose(self) -> ComposeResult:
        with Vertical(id="result-box", classes="failed" if self.failed else ""):
            yield Label(Text(clean(self.title_text, limit=100), style="bold"), id="result-title")
            with VerticalScroll(id="result-body"):
                yield Static(self.body, id="result-text")
            yield Button(Text("OK [enter]"), id="result-ok", compact=True)

    def on_mount(self) -> None:
        for ok in self.query("#result-ok").results(Button):  # none once dismissed as it opened
            ok.focus()

    def action_close(self) -> None:
        self.dismiss(None)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(None)
