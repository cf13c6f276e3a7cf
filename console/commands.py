"""The command palette's search: a command is found by its name (Textual's fuzzy match, as its
own provider does) or, failing that, by the words of its description, so an on-call engineer who
types what they want to do ("cron", "drain", "stale") finds the screen that does it (Schedules,
Workers). A description's hit ranks below every name's."""

from __future__ import annotations

from textual.command import Hit, Hits
from textual.content import Content
from textual.system_commands import SystemCommandsProvider

DESCRIPTION_SCORE = 1e-3  # below any fuzzy match of a name


class Commands(SystemCommandsProvider):
    """The app's system commands (JobsConsole.get_system_commands), searched by name, then by
    every word of the query found in the description."""

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        words = query.lower().split()
        for name, help_text, callback, *_ in self.app.get_system_commands(self.screen):
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
            elif words and all(word in help_text.lower() for word in words):
                yield Hit(DESCRIPTION_SCORE, Content.from_markup(name), callback, help=help_text)
