"""The command palette's search: a command is found by its name (Textual's fuzzy match, as its
own provider does) or, failing that, by the words of its description, so an on-call engineer who
types what they want to do ("cron", "drain", "stale") finds the screen that does it (Schedules,
Workers). A description's hit ranks below every name's."""

from __future__ import annotations

from textual.command import Hit, Hits
from textual.content import Content
from textual.fuzzy import Matcher
from textual.system_commands import SystemCommandsProvider

DESCRIPTION_SCORE = 1e-3  # below any fuzzy match of a name


class Commands(SystemCommandsProvider):
    """The app's system commands (JobsConsole.get_system_commands), searched by name, then by
    every word of the query found in the description."""

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        words = query.lower().split()
        for name, help_text, callback, *_ in self.app.get_system_commands(self.screen):
            shown = Content.from_markup(name)
            score = matcher.match(shown.plain)
            if score > 0:
                yield Hit(score, highlighted(matcher, shown), callback, help=help_text)
            elif words and all(word in help_text.lower() for word in words):
                yield Hit(DESCRIPTION_SCORE, shown, callback, help=help_text)


def highlighted(matcher: Matcher, shown: Content) -> Content:
    """``shown`` with the letters the query matched highlighted. The match runs on the text as
    shown: Textual's ``Matcher.highlight`` matches the markup and marks the same offsets in the
    text shown, one letter off after each escaped bracket ("Retry all  \\[X]")."""
    _, offsets = matcher.fuzzy_search.match(matcher.query, shown.plain)
    for offset in offsets:
        if not shown.plain[offset].isspace():
            shown = shown.stylize(matcher.match_style, offset, offset + 1)
    return shown
