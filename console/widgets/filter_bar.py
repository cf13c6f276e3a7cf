"""The filter bar: one line, one grammar, for every screen that filters jobs.

The grammar: ``key=value`` words (``queue= state= name= tenant= code= input.FIELD=V search=``,
the engine's ``parse_filter``), and any bare word a search on the id or the idempotency key.
Enter parses it: a filter the engine refuses is shown as its code, cause and fix, and nothing
changes; a good one goes up as ``FilterBar.Applied``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from textual.message import Message
from textual.widgets import Input

from engine.errors import JobsError
from engine.introspect.filters import describe_filter, parse_filter
from engine.projections import JobFilter


def filter_from_text(text: str) -> JobFilter:
    words: list[str] = []
    bare: list[str] = []
    for w in text.split():
        (words if "=" in w else bare).append(w)
    where = parse_filter(" ".join(words)) if words else JobFilter()
    if bare:
        where = replace(where, search=" ".join(bare))
    return where


def filter_to_text(where: JobFilter) -> str:
    return "" if where.empty else describe_filter(where)


def typed_fix(fix: str) -> str:
    """A filter error's fix as this bar takes it: the engine's names the CLI's words
    (``jobsctl ls --filter state=dead --filter queue=emails``), the bar takes ``state=dead queue=emails``."""
    if not fix.startswith("jobsctl ls "):
        return fix
    return " ".join(w for w in fix.split()[2:] if w not in ("--filter", "-f"))


class FilterBar(Input):
    @dataclass
    class Applied(Message):
        where: JobFilter

    def __init__(self, placeholder: str, *, id: str = "filter") -> None:
        super().__init__(placeholder=placeholder, id=id, compact=True)

    def show(self, where: JobFilter) -> None:
        self.value = filter_to_text(where)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        try:
            where = filter_from_text(event.value)
        except JobsError as err:
            self.notify(f"{err.cause}\ntype: {typed_fix(err.fix)}", title=err.code, severity="error", timeout=6)
            return
        self.post_message(self.Applied(where))
