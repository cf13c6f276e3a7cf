"""Activity: who did what, when, and why.

Two lists, newest first. "This session" is what this operator did here (every confirmed action,
landed or refused, with its fix) and when the database went away and came back: kept in the App
for the session only. Under it, the audit log: every operator's actions that changed something,
whoever took them (a console, jobsctl, Python), read from the database through the source
(``Source.audit``, the latest ``AUDIT_SHOWN``) on the console's refresh like any data screen, so a
lost database raises the banner here too; the entries last read stay on screen meanwhile.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from console.format import clean, short_id, stamp
from console.messages import AuditLoaded
from console.screens.base import DataScreen
from console.widgets.fresh import update_changed
from engine.audit import detail_words

AUDIT_SHOWN = 50  # the audit log's latest entries shown; `jobsctl audit --before ID` pages on
ACTOR_LIMIT = 20  # cells of an actor's name ("console:alice", "alice@host")
DETAIL_LIMIT = 80  # cells of an entry's detail

# How each of the engine's audit actions (engine/audit.py) reads, its target in place of {}.
SAID = {
    "queue.pause": "paused queue {}",
    "queue.resume": "resumed queue {}",
    "worker.drain": "asked worker {} to drain",
    "job.retry": "retried job {}",
    "job.retry_from_step": "re-ran job {}",
    "job.cancel": "cancelled job {}",
    "job.discard": "discarded job {}",
    "bulk.retry": "retried in bulk: {}",
    "bulk.cancel": "cancelled in bulk: {}",
    "bulk.discard": "discarded in bulk: {}",
    "schedule.pause": "paused task {}",
    "schedule.resume": "resumed task {}",
    "schedule.trigger": "triggered task {}",
    "backfill.start": "started a pass of backfill {}",
    "backfill.retry": "retried a pass of backfill {}",
}


def activity_text(entries: list, now) -> RenderableType:  # type: ignore[no-untyped-def, type-arg]
    """This session's list, newest first, as a grid: a long summary or fix wraps under itself,
    not under the time."""
    head = Text("This session", style="bold underline")
    if not entries:
        return Group(
            head, Text("Nothing yet: the actions you confirm this session are listed here.", style="dim italic")
        )
    grid = Table.grid(padding=(0, 1))
    grid.add_column(width=9, no_wrap=True)
    grid.add_column(width=6, no_wrap=True)
    grid.add_column(ratio=1)
    for e in reversed(entries):
        said = Text(clean(e.summary, limit=300, multiline=True))  # a note said on a line of its own
        if e.fix:
            said.append(f"\nfix: {clean(e.fix, limit=200)}", style="italic")
        outcome = Text("ok", style="bold") if e.ok else Text("FAILED", style="bold reverse")
        grid.add_row(Text(stamp(e.at, now), style="dim"), outcome, said)
    return Group(head, grid)


def audit_text(entries: list[Any] | None, now: datetime, failed: str | None = None) -> RenderableType:
    """The audit log's entries (engine.records.AuditEntry, newest first; None: not read yet) as a
    grid of when, who, and what on which target (the note wrapped under it). Past ``AUDIT_SHOWN``
    entries, the last line says how to read on. ``failed``: the last read's failure, said."""
    parts: list[RenderableType] = [Text("Audit log: every operator's actions, newest first", style="bold underline")]
    if failed is not None:
        kept = "; the entries are as last read" if entries is not None else ""
        parts.append(Text(f"Not read: {failed}{kept} (r retries).", style="bold"))
    if entries is None:
        if failed is None:
            parts.append(Text("Reading…", style="dim italic"))
        return Group(*parts)
    if not entries:
        parts.append(
            Text("No entry yet: each operator action that changes something is recorded here.", style="dim italic")
        )
        return Group(*parts)
    shown = entries[:AUDIT_SHOWN]
    rows = [(Text(_when(e, now), style="dim"), Text(_actor(e), style="bold"), said_of(e)) for e in shown]
    grid = Table.grid(padding=(0, 1))
    grid.add_column(width=max(when.cell_len for when, _, _ in rows), no_wrap=True)
    grid.add_column(width=max(who.cell_len for _, who, _ in rows), no_wrap=True)
    grid.add_column(ratio=1)
    for row in rows:
        grid.add_row(*row)
    parts.append(grid)
    if len(entries) > len(shown) and shown[-1].id is not None:
        parts.append(Text(f"older entries: jobsctl audit --before {shown[-1].id}", style="dim"))
    return Group(*parts)


def said_of(e: Any) -> Text:
    """What an entry did, to what (a job by its short id and name), within which tenant, with its
    detail in short words; its note on the lines under it."""
    detail = dict(e.detail or {})
    target = e.target
    if e.action.startswith("job."):
        name = detail.pop("name", None)
        target = short_id(target) + (f" ({name})" if isinstance(name, str) else "")
    head, _, tail = SAID.get(e.action, f"{e.action} {{}}").partition("{}")
    t = Text.assemble(clean(head, limit=60), (clean(target, limit=120), "bold"), tail)
    if e.tenant is not None:
        t.append(f" · tenant {clean(e.tenant, limit=30)}", style="dim")
    words = detail_text(detail)
    if words:
        t.append(f" · {words}", style="dim")
    if e.note:
        t.append(f"\n“{clean(e.note, limit=300)}”", style="italic")
    return t


def detail_text(detail: dict[str, Any] | None) -> str:
    """An entry's detail in short words ("12 changed, of 12 planned"), bounded, as `jobsctl audit`
    says it (engine.audit.detail_words)."""
    return clean(", ".join(detail_words(detail, short_id)), limit=DETAIL_LIMIT)


def _when(e: Any, now: datetime) -> str:
    """An entry's time as the console stamps times (HH:MM:SS today, else the date too), in UTC
    whatever zone the database answered it in."""
    return stamp(e.at.astimezone(UTC) if e.at.tzinfo is not None else e.at, now)


def _actor(e: Any) -> str:
    return clean(e.actor, limit=ACTOR_LIMIT) if e.actor else "—"


class ActivityScreen(DataScreen):
    SCOPE = "activity"

    entries: list[Any] | None = None  # the audit log as last read (None: not yet)
    failed: str | None = None  # the last read's failure, as the banner titles it

    def crumb(self) -> str:
        return "Activity"

    def compose(self) -> ComposeResult:
        yield from self.compose_top()
        yield Static(Text("Activity", style="bold"), classes="screen-title")
        with VerticalScroll(id="activity-body"):
            yield Static(id="activity")
            yield Static(id="audit")
        yield from self.compose_bottom()

    def on_mount(self) -> None:
        self.show()
        self.query_one("#activity-body", VerticalScroll).focus()
        super().on_mount()

    async def fetch(self) -> AuditLoaded:
        try:
            entries = await self.source.audit(limit=AUDIT_SHOWN + 1)  # one more: are there older?
        except Exception as exc:  # the base's loop raises the banner and retries; said here too
            self.failed = self.source.describe_failure(exc)[0]
            self.show()
            raise
        return AuditLoaded(entries)

    def on_audit_loaded(self, message: AuditLoaded) -> None:
        self.entries, self.failed = message.data, None
        self.show()

    def activity_changed(self) -> None:
        """The App noted an entry in this session's list (an action, the database lost or back)."""
        self.show()

    def show(self) -> None:
        now = self.source.now()
        update_changed(self.query_one("#activity", Static), activity_text(self.app.activity, now))  # type: ignore[attr-defined]
        update_changed(self.query_one("#audit", Static), audit_text(self.entries, now, self.failed))
