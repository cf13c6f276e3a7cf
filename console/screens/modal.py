"""Modals answered once. Textual's ``Screen.dismiss`` pops whatever screen is on top: a second
answer (an Enter queued behind the Escape that closed the command palette, an ``n`` typed twice
into a confirm) popped the screen under it, or crashed the console with ScreenStackError when
that was the last one. Found by driving the console with random keys at 80x24."""

from __future__ import annotations

from typing import Any

from textual.await_complete import AwaitComplete
from textual.command import CommandPalette
from textual.css.query import NoMatches


class AnswerOnce:
    """First base of a modal screen: ``dismiss`` acts only while the screen is the one on top."""

    def dismiss(self, result: Any = None) -> AwaitComplete:
        if self.app.screen is not self:  # type: ignore[attr-defined]
            return AwaitComplete.nothing()
        return super().dismiss(result)  # type: ignore[misc, no-any-return]


class ConsolePalette(AnswerOnce, CommandPalette):
    """The command palette, answered once; a page move on a list being rebuilt moves nothing, and
    results that land once it is closed show nothing."""

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
