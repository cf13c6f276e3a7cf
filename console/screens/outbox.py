"""Outbox: the staged jobs the relays publish. The backlog (capped count, oldest unpublished age)
and that age's trend, the relays alive, the live claims (which relay, how many rows, lease end),
published in the last hour; the backlog's head and the failing rows in stage order, and for the
selected row why it is not published yet (the engine's own sentence, as `jobsctl outbox --why ID`).

Read-only by nature: a relay retries a failing row at its next claim and takes a lapsed claim's
rows once the lease ends, so there is nothing for an operator to push from here.

The trend is kept by the screen: one sample (oldest age, backlog) per refresh that found the clock
moved, the last ``SAMPLES`` of them. It costs no read: a per-minute history from the rows'
timestamps would scan every row published in the window (at 20,000 rows/s, millions an hour),
which no index keeps under the 50 ms budget. It covers the time this screen has been watched.
"""

from __future__ import annotations

from collections import deque
from datetime import datetime
from typing import Any, NamedTuple

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from console.format import cell, clean, relative_at, short_id, since, stamp
from console.messages import OutboxLoaded
from console.screens.base import DataScreen
from console.widgets.fresh import update_changed
from console.widgets.keyed_table import KeyedTable
from console.widgets.sparkline import spark
from engine.durations import duration

COLUMNS = (
    ("row", "id"),
    ("staged", "staged"),
    ("job", "job"),
    ("status", "status"),
    ("tries", "attempts"),
    ("queue", "queue"),
    ("tenant", "tenant"),
    ("last error", "error"),  # cut short: the why below the table says it whole
)
SAMPLES = 60  # refreshes the trend remembers
TREND_WIDTH = 30
SHOWN_RELAYS, SHOWN_CLAIMS = 3, 2


class Sample(NamedTuple):
    at: datetime
    age: float  # seconds; 0 when nothing waits
    backlog: int


def _status(w: Any, now: datetime) -> Text:
    if w.status == "held":
        return Text(f"held, lease {relative_at(w.row.lease_until, now)}", style="cyan")
    if w.status == "failing":
        return Text("FAILING", style="bold red")
    if w.status == "lapsed":
        return Text("LAPSED claim", style="bold yellow")
    return Text(w.status, style="dim")


def staged_row(w: Any, now: datetime) -> tuple[Text, ...]:
    r = w.row
    return (
        Text(short_id(r.id), style="bold"),
        Text(since(r.staged_at, now), style="dim"),
        cell(r.name, limit=24),
        _status(w, now),
        Text(str(r.attempts), justify="right", style="bold red" if r.attempts else "dim"),
        cell(r.queue, limit=16),
        cell(r.tenant or "—", limit=16),
        cell(r.last_error or "—", limit=32, style="red" if r.last_error else "dim"),
    )


def title_text(view: Any) -> Text:
    t = Text("Outbox", style="bold")
    backlog = f"{'≥' if view.backlog_capped else ''}{view.backlog:,}"
    t.append(f"  backlog {backlog}", style="bold yellow" if view.backlog else "")
    age = view.oldest_unpublished_age
    t.append(f" · oldest {duration(age) if age is not None else '—'}")
    t.append(f" · published/1h {'≥' if view.published_capped else ''}{view.published_last_hour:,}")
    return t


def _age(s: Sample) -> str:
    return duration(s.age) if s.backlog else "none waiting"


def trend_text(samples: list[Sample]) -> Text:
    t = Text("Age trend ", style="bold")
    if len(samples) < 2:
        t.append("one sample so far: the screen takes one at each refresh", style="dim")
        return t
    first, last = samples[0], samples[-1]
    span = duration((last.at - first.at).total_seconds())
    if not any(s.backlog for s in samples):
        t.append(f"nothing waited at any refresh over {span}", style="green")
        return t
    ages = [s.age for s in samples][-TREND_WIDTH:]
    t.append(spark(ages, width=TREND_WIDTH, low=min(ages)), style="yellow")
    delta = last.age - first.age
    word, style = ("rising", "bold yellow") if delta >= 1 else ("falling", "green") if delta <= -1 else ("steady", "")
    t.append(f"  {_age(first)} → {_age(last)} over {span}: ")
    t.append(word, style=style)
    t.append(f"  (backlog {first.backlog:,} → {last.backlog:,})", style="dim")
    return t


def relays_text(view: Any) -> Text:
    if not view.relays:
        style = "bold reverse red" if view.backlog else "yellow"
        return Text(
            "No relay is alive: nothing publishes staged rows (run `jobsctl worker` or `jobsctl relay`).", style
        )
    t = Text(f"Relays alive {len(view.relays)}: ", style="bold")
    shown = [f"{clean(r.id, limit=40)} (beat {since(r.heartbeat_at, view.now)})" for r in view.relays[:SHOWN_RELAYS]]
    t.append(
        ", ".join(shown) + (f", +{len(view.relays) - SHOWN_RELAYS} more" if len(view.relays) > SHOWN_RELAYS else "")
    )
    return t


def claims_text(view: Any) -> Text:
    if not view.holders:
        return Text("No claim is held: no relay is publishing a batch right now.", style="dim")
    t = Text()
    for i, h in enumerate(view.holders[:SHOWN_CLAIMS]):
        t.append("\n" if i else "")
        t.append("Claim ", style="bold")
        t.append(f"{clean(h.relay, limit=40)} holds {h.rows:,} row{'s' if h.rows != 1 else ''}, lease ends ")
        t.append(f"{relative_at(h.lease_until, view.now)} ({stamp(h.lease_until, view.now)})", style="cyan")
    if len(view.holders) > SHOWN_CLAIMS:
        t.append(f"  +{len(view.holders) - SHOWN_CLAIMS} more claims", style="dim")
    return t


def why_text(w: Any) -> Text:
    r = w.row
    t = Text(f"Why is row {r.id} not published? ", style="bold")
    t.append(clean(w.text, limit=400), style="red" if w.status == "failing" else "")
    return t


class OutboxScreen(DataScreen):
    SCOPE = "outbox"
    MODE = "outbox"

    _view: Any = None

    def __init__(self) -> None:
        super().__init__()
        self._rows: dict[str, Any] = {}
        self._samples: deque[Sample] = deque(maxlen=SAMPLES)

    def compose(self) -> ComposeResult:
        yield from self.compose_top()
        yield Static("Outbox", classes="screen-title", id="outbox-title")
        yield Static("", id="outbox-trend", classes="note")
        yield Static("", id="outbox-relays", classes="note")
        yield Static("", id="outbox-claims", classes="note")
        yield KeyedTable(COLUMNS, id="outbox")
        yield Static("", id="empty", classes="empty")
        yield Static("", id="outbox-why", classes="note")
        yield from self.compose_bottom()

    def on_mount(self) -> None:
        self.query_one("#outbox", KeyedTable).focus()
        super().on_mount()

    async def fetch(self) -> OutboxLoaded:
        view, rows = await self.source.outbox()
        return OutboxLoaded(view, rows=rows)

    @property
    def samples(self) -> list[Sample]:
        return list(self._samples)

    def on_outbox_loaded(self, message: OutboxLoaded) -> None:
        view = self._view = message.data
        sample = Sample(view.now, view.oldest_unpublished_age or 0.0, view.backlog)
        if self._samples and self._samples[-1].at == view.now:  # the same moment read again
            self._samples.pop()
        self._samples.append(sample)
        self._rows = {w.id: w for w in message.rows}
        self.query_one("#outbox", KeyedTable).sync([(w.id, staged_row(w, view.now)) for w in message.rows])
        update_changed(self.query_one("#outbox-title", Static), title_text(view))
        update_changed(self.query_one("#outbox-trend", Static), trend_text(self.samples))
        update_changed(self.query_one("#outbox-relays", Static), relays_text(view))
        update_changed(self.query_one("#outbox-claims", Static), claims_text(view))
        empty = self.query_one("#empty", Static)
        empty.display = not message.rows
        nothing = view.published_last_hour == 0 and not view.relays
        update_changed(
            empty,
            "Nothing waits, and nothing was published in the last hour. An app stages a job inside its own transaction: "
            "eng.stage(conn, job, input); the relay publishes it once that transaction commits."
            if nothing
            else "Nothing waits: every committed stage is published.",
        )
        self._show_why()

    def _selected(self) -> Any:
        key = self.query_one("#outbox", KeyedTable).selected_key
        return None if key is None else self._rows.get(key)

    def _show_why(self) -> None:
        w = self._selected()
        text = Text("") if w is None or self._view is None else why_text(w)
        update_changed(self.query_one("#outbox-why", Static), text)

    def on_data_table_row_highlighted(self, event: KeyedTable.RowHighlighted) -> None:
        event.stop()
        if self._view is not None:
            self._show_why()
