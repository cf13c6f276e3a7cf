"""Modals answered once, asked only by a screen still there, and gone with the flow that asked.

Textual's ``Screen.dismiss`` pops whatever screen is on top: a second answer (an Enter queued
behind the Escape that closed the command palette, an ``n`` typed twice into a confirm) popped the
screen under it, or crashed the console with ScreenStackError when that was the last one.

A flow asks from a worker of its screen, and Textual cancels that worker when the screen goes. A
key typed before the question showed (``c`` then Escape on a job) left the screen first: the
question then stood over the screen below, answering it resolved a cancelled wait, and the console
crashed with InvalidStateError. ``ask`` asks only while the asking screen is in the stack, and
takes the question away with its flow.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, TypeVar

from textual.await_complete import AwaitComplete
from textual.command import CommandPalette
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen

if TYPE_CHECKING:
    from console.screens.hosts import ScreenHost

T = TypeVar("T")


class AnswerOnce:
    """First base of a modal screen: ``dismiss`` acts only while the screen is the one on top."""

    def dismiss(self, result: Any = None) -> AwaitComplete:
        if self.app.screen is not self:  # type: ignore[attr-defined]
            return AwaitComplete.nothing()
        return super().dismiss(result)  # type: ignore[misc, no-any-return]


async def ask(asker: ScreenHost, question: Screen[T]) -> T | None:
    """Push ``question`` over ``asker``'s stack and wait for its answer; None, unasked, when
    ``asker`` has left the stack (the operator went back before the question showed)."""
    app = asker.app
    if asker not in app.screen_stack:
        return None
    try:
        return await app.push_screen(question, wait_for_dismiss=True)
    except asyncio.CancelledError:  # the asking screen went, and its flow with it
        withdraw(question)
        raise


def withdraw(screen: Screen[Any]) -> None:
    """Take ``screen`` off the stack now, with whatever was opened over it (the palette), giving
    no answer. Dismissing instead waited for what was over it to close first, and a question
    under the palette stayed on screen when the palette closed."""
    app = screen.app
    if screen not in app.screen_stack:
        return
    while app.screen is not screen:
        app.pop_screen()
    app.pop_screen()


class ConsolePalette(AnswerOnce, CommandPalette):
    """The command palette, answered once; a page move on a list being rebuilt moves nothing, and
    results that land once it is closed show nothing."""

    # A second Enter typed before the first was handled reached the palette after it had closed,
    # and Textual ran the chosen command again: on a screen the first run had left (Back), where
    # it crashed. Whatever reaches the palette once it is closed chooses nothing.
    def on_input_submitted(self, event: Message) -> None:
        self._closed_takes_nothing(event)

    def on_button_pressed(self, event: Message) -> None:
        self._closed_takes_nothing(event)

    def on_option_list_option_selected(self, event: Message) -> None:
        self._closed_takes_nothing(event)

    def _closed_takes_nothing(self, event: Message) -> None:
        if self.app.screen is not self:
            event.stop()
            event.prevent_default()

    def _action_command_list(self, action: str) -> None:
        # Textual 8.2.8's option list raises KeyError on a page move while its lines are being
        # rebuilt (the list refilled as the search changes): the move has nowhere to go, so none.
        try:
            super()._action_command_list(action)
        except KeyError:
            pass

    def _watch__list_visible(self) -> None:
        # The search's results can land after the palette closed (Textual 8.2.8 does not always
        # cancel the search on Escape): its widgets are gone, and there is no list to show.
        try:
            super()._watch__list_visible()  # type: ignore[misc]
        except NoMatches:
            pass
