"""Job detail: what the job is, why it is in its state now, its steps, attempts, input, result
and history. Everything from the job is escaped and bounded (console/format.py)."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from console import palette
from console.format import clean, pretty_json, relative_at, safe, short_id, since, stamp
from console.messages import JobLoaded
from console.screens.base import DataScreen
from console.screens.flows import Flows
from console.widgets.fresh import update_changed
from console.widgets.state_bar import state_text
from console.widgets.timeline import StepTimeline, timeline_text
from engine.durations import duration, relative
from engine.projections import JobDetail, JobSummary
from engine.types import LIVE_STATES, JobState, waited_out

_LIVE = set(LIVE_STATES)


def facts_text(d: JobDetail, now: datetime) -> Text:
    j = d.job
    rows: list[tuple[str, Text | str]] = [
        ("name", safe(j.name, limit=60)),
        ("queue", safe(j.queue, limit=40)),
        ("tenant", safe(j.tenant, limit=40)),
        ("key", safe(j.idempotency_key, limit=70)),
        ("attempt", f"{j.attempt} of {j.max_attempts}" + (f"  (priority {j.priority})" if j.priority else "")),
        ("created", f"{stamp(j.created_at, now)}  ({since(j.created_at, now)})"),
        ("run at", f"{stamp(j.run_at, now)}  ({relative_at(j.run_at, now)})" if j.state in _LIVE else "—"),
    ]
    if d.parents:  # the job whose fan-out enqueued it
        p, step = d.parents[0]
        more = f"  (+{len(d.parents) - 1} more)" if len(d.parents) > 1 else ""
        # o opens the fan-in waiting for this job first (JobDetailScreen._fan_in): named here only
        # when that is this parent, else the why line names it.
        waiting = next((c.job_id for c in d.why.causes if c.kind == "awaited" and c.job_id), None)
        rows.append(
            (
                "parent",
                Text.assemble(
                    (short_id(p.id), "bold"),
                    f"  {clean(p.name, limit=20)}  ",
                    state_text(p.state.value),
                    f" · step {clean(step, limit=20)!r}{more}",
                    ("  o: open", "dim") if waiting in (None, p.id) else "",
                ),
            )
        )
    if d.trace_id:  # its enqueuer's trace: where to look in the tracing backend
        rows.append(("trace", d.trace_id))
    if j.claimed_by:
        rows.append(("worker", safe(j.claimed_by, limit=50)))
    if j.state is JobState.RUNNING and j.lease_until:
        left = (j.lease_until - now).total_seconds()
        rows.append(
            (
                "lease",
                f"until {stamp(j.lease_until, now)} ({duration(left)} left)"
                if left > 0
                else f"lapsed {relative(left)}",
            )
        )
    if j.finished_at:
        rows.append(("finished", f"{stamp(j.finished_at, now)}  ({since(j.finished_at, now)})"))
    if j.error_code or j.stop_reason:
        rows.append(
            (
                "error",
                Text.assemble(
                    (clean(j.error_code or "—", limit=40), palette.style("error")),
                    f"  stop reason: {j.stop_reason}" if j.stop_reason else "",
                    ("  (an earlier run's: it completed since)", "dim") if j.state is JobState.COMPLETED else "",
                ),
            )
        )
        if d.fix:  # what that error said to do (a handler's JobsError fix)
            rows.append(("fix", safe(d.fix, limit=200)))
    if d.next_retry is not None:
        rows.append(("next", safe(d.next_retry.note, limit=100)))
    t = Text()
    for i, (label, value) in enumerate(rows):
        if i:
            t.append("\n")
        t.append(f"{label:>9}  ", style="dim")
        t.append(value if isinstance(value, Text) else Text(value))
    return t


def event_sentence(d: JobDetail, now: datetime) -> str | None:
    """A job waiting for an event, said from its wait: sending the event wakes it at once, else its
    worker looks again at run_at (the job's event poll; the interval itself is the app's
    declaration, which a console on a DSN cannot see), and it gives up at the wait's timeout."""
    j = d.job
    wait = j.wait or {}
    if j.state is not JobState.SUSPENDED or wait.get("kind") != "event":
        return None
    match = wait.get("match")
    what = f"Waiting for event {clean(str(wait.get('event')), limit=80)!r}"
    what += f" matching {clean(json.dumps(match, default=str), limit=160)}" if match else ""
    try:
        timeout = datetime.fromisoformat(str(wait["timeout_at"])) if wait.get("timeout_at") else None
    except ValueError:
        timeout = None
    if timeout is not None and j.run_at >= timeout:
        return f"{what}. Sending it wakes the job at once; otherwise it times out at {stamp(timeout, now)} ({relative_at(timeout, now)})."
    check = "is due now" if j.run_at <= now else f"is at {stamp(j.run_at, now)} ({relative_at(j.run_at, now)})"
    end = f"it times out at {stamp(timeout, now)} ({relative_at(timeout, now)})" if timeout else "it never times out"
    return f"{what}. Sending it wakes the job at once; otherwise the next check for it {check}, and {end}."


def why_text(d: JobDetail, now: datetime) -> Text:
    t = Text()
    t.append("Why: ", style="bold")
    t.append(event_sentence(d, now) or clean(d.why.summary, limit=600))
    if any(c.kind == "awaited" for c in d.why.causes):  # a fan-in waits for this job
        t.append("  o: open the fan-in", style="dim")
    return t


AWAITED_LINES = 8  # the jobs a fan-in waits for, listed one a line: the unsettled ones first


def awaited_text(d: JobDetail, now: datetime, *, read_only: bool = False) -> Text | None:
    """The jobs a fan-in waits for (or waited for, or a fan-out enqueued): how many in each state,
    then one line each (short id, name, state, what ended a dead one), those still live first;
    None for any other job. ``read_only``: the C and X hints are left out (neither is offered)."""
    if not d.awaited:
        return None
    by_state = Counter(a.state.value for a in d.awaited)
    t = Text()
    t.append(f"{d.awaited_as.capitalize()} ", style="bold")
    t.append(" · ".join(f"{n:,} {state}" for state, n in by_state.most_common()))
    target = waited_target(d)
    if target is not None:  # on a line of their own: with the counts they overflow 80 columns
        said = "still live" if target.state in _LIVE else target.state.value
        t.append(f"\n  w: open the first {said}", style="dim")
        if read_only:  # C and X are not offered read-only: no hint names them
            pass
        elif target.state in _LIVE:
            t.append(" · C: cancel the job with those still live", style="dim")
        elif d.job.state is JobState.DEAD and any(a.state is JobState.DEAD for a in d.awaited):
            t.append(" · X: retry the job with those dead", style="dim")
    ordered = sorted(d.awaited, key=lambda a: a.state not in _LIVE)  # stable: the fan-in's order within
    for a in ordered[:AWAITED_LINES]:
        t.append(f"\n  {short_id(a.id)}  ", style="dim")
        t.append(clean(a.name, limit=28).ljust(28))
        t.append_text(state_text(a.state.value))
        if a.error_code:
            t.append(f"  {clean(a.error_code, limit=40)}", style=palette.style("error"))
        if a.state in _LIVE:
            t.append(f"  since {stamp(a.updated_at, now)}", style="dim")
    if len(ordered) > AWAITED_LINES:
        t.append(f"\n  … and {len(ordered) - AWAITED_LINES:,} more", style="dim")
    return t


def waited_target(d: JobDetail) -> JobSummary | None:
    """The job of a fan-in's wait worth opening: the first still live (what holds it up), else
    the first that died or was cancelled."""
    live = next((a for a in d.awaited if a.state in _LIVE), None)
    return live or next((a for a in d.awaited if a.state in (JobState.DEAD, JobState.CANCELLED)), None)


def runs_of(d: JobDetail, now: datetime) -> list[tuple[datetime, datetime]]:
    """The job's runs as (start, end), in the order they ran: one per attempt row (a resumed run
    keeps one row), the run under way ending now (a claim that resumed a suspended run continues
    that run; one that did not starts a new one)."""
    spans = [(a.started_at, a.finished_at) for a in d.attempts]
    j, last = d.job, d.attempts[-1] if d.attempts else None
    # A suspension burned no attempt: the run it paused is attempt j.attempt + 1 until resumed.
    attempt = j.attempt if j.state is JobState.RUNNING else j.attempt + 1
    continues = last is not None and last.outcome == "suspended" and last.attempt == attempt
    if j.state is JobState.RUNNING and j.claimed_at is not None and not continues:
        spans.append((j.claimed_at, now))
    elif j.state in (JobState.RUNNING, JobState.SUSPENDED) and continues and spans:
        spans[-1] = (spans[-1][0], max(now, spans[-1][1]))
    return spans


def attempts_text(d: JobDetail, now: datetime) -> Text:
    """One line per run, numbered in the order they ran (a retry from a step starts a new run at
    attempt 1 of its own count: the run number tells them apart)."""
    if not d.attempts:
        return Text("No attempt has been made yet.", style="dim italic")
    t = Text()
    t.append(
        f"{'run':>3} {'attempt':<7} {'outcome':<10} {'worker':<16} {'started':<9} {'took':>7}  error\n",
        style="underline",
    )
    first = max(0, len(d.attempts) - 10)
    for n, a in enumerate(d.attempts[first:], start=first + 1):
        took = (a.finished_at - a.started_at).total_seconds()
        style = (
            palette.style("error")
            if a.outcome in ("dead", "retried", "lost")
            else (palette.style("ok") if a.outcome == "completed" else "")
        )
        t.append(f"{f'#{n}':>3} {f'{a.attempt}/{d.job.max_attempts}':<7} ")
        t.append(f"{clean(a.outcome, limit=10):<10} ", style=style)
        t.append(f"{clean(a.worker, limit=16):<16} {stamp(a.started_at, now):<9} {duration(took):>7}  ")
        t.append(clean(a.error_code or a.error or "", limit=60), style=palette.style("error"))
        t.append("\n")
    if len(d.attempts) > 10:
        t.append(f"(the last 10 of {len(d.attempts)} runs)", style="dim")
    t.rstrip()
    return t


TRACEBACK_LINES = 8  # folded: the tail, where it was raised


def traceback_text(d: JobDetail, unfold: bool) -> Text | None:
    """The latest failed attempt's stored traceback: its last lines unless unfolded, the
    exception line in red, the frames dim."""
    failed = [(n, a) for n, a in enumerate(d.attempts, start=1) if a.traceback]
    if not failed:
        return None
    n, a = failed[-1]
    lines = (a.traceback or "").splitlines()
    start = 0 if unfold else max(0, len(lines) - TRACEBACK_LINES)
    if start and lines[start - 1].lstrip().startswith("File "):  # never a frame's code without its File line
        start -= 1
    shown = lines[start:]
    t = Text()
    t.append("Traceback", style="bold")
    t.append(f"  run #{n}, attempt {a.attempt}\n", style="dim")
    if len(shown) < len(lines):
        n = len(lines) - len(shown)
        t.append(f"… {n} earlier line{'s' if n > 1 else ''} folded (u: unfold)\n", style="dim italic")
    for i, line in enumerate(shown):
        last = i == len(shown) - 1
        style = palette.style("error") if last else ("dim" if line.lstrip().startswith("File ") else "")
        t.append(clean(line, limit=200), style=style)
        if not last:
            t.append("\n")
    return t


def history_text(d: JobDetail, now: datetime) -> Text:
    if not d.history:
        return Text("No operator action or lifecycle event recorded.", style="dim italic")
    t = Text()
    for i, h in enumerate(d.history[-12:]):
        if i:
            t.append("\n")
        t.append(f"{stamp(h.at, now):<9} ", style="dim")
        t.append(f"{clean(h.kind, limit=20):<14}", style="bold")
        t.append(f" by {clean(h.actor, limit=30)}" if h.actor else "")
        if h.kind == "event" and h.data.get("event"):  # which event woke the job
            t.append(f"  {clean(h.data['event'], limit=60)}")
        if h.note:
            t.append(f"  note: {clean(h.note, limit=120)}", style="italic")
    return t


def json_block(label: str, value: object, unfold: bool) -> Text:
    body, folded = pretty_json(value, unfold=unfold)
    t = Text()
    t.append(f"{label}\n", style="bold")
    t.append_text(body)
    if folded:
        t.append(f"\n… {folded} more lines folded (u: unfold)", style="dim italic")
    return t


class JobDetailScreen(DataScreen, Flows):
    SCOPE = "job_detail"

    def crumb(self) -> str:
        return f"job {short_id(self.job_id)}"

    def __init__(self, job_id: str) -> None:
        super().__init__()
        self.job_id = job_id
        self.detail: JobDetail | None = None
        self.unfolded = False
        self._offered: tuple[object, ...] | None = None

    def compose(self) -> ComposeResult:
        yield from self.compose_top()
        with VerticalScroll(id="detail"):
            yield Static(Text(f"Job {self.job_id}", style="bold"), id="detail-title", classes="screen-title")
            yield Static("", id="why-line")
            yield Static("", id="facts")
            yield Static(Text("Steps", style="bold"), classes="section")
            yield StepTimeline(id="steps")
            yield Static("", id="awaited")
            yield Static(Text("Attempts", style="bold"), classes="section")
            yield Static("", id="attempts")
            yield Static("", id="traceback", classes="json")
            yield Static("", id="input", classes="json")
            yield Static("", id="result", classes="json")
            yield Static(Text("History", style="bold"), classes="section")
            yield Static("", id="history")
        yield from self.compose_bottom()

    def on_mount(self) -> None:
        self.query_one("#detail", VerticalScroll).focus()
        super().on_mount()

    async def fetch(self) -> JobLoaded:
        return JobLoaded(await self.source.job(self.job_id))

    def on_job_loaded(self, message: JobLoaded) -> None:
        d: JobDetail = message.data
        self.detail = d
        now = self.source.now()
        put = self._put
        put("#detail-title", Text.assemble(("Job ", "bold"), (d.job.id, "bold"), "  ", state_text(d.job.state.value)))
        put("#why-line", why_text(d, now))
        put("#facts", facts_text(d, now))
        put("#steps", timeline_text(d.steps, now, runs_of(d, now), settled=d.job.state not in _LIVE))
        awaited = awaited_text(d, now, read_only=self.source.read_only)
        self.query_one("#awaited", Static).display = awaited is not None
        put("#awaited", awaited or Text())
        put("#attempts", attempts_text(d, now))
        trace = traceback_text(d, self.unfolded)
        self.query_one("#traceback", Static).display = trace is not None
        put("#traceback", trace or Text())
        put("#input", json_block("Input", d.job.input, self.unfolded))
        result = self.query_one("#result", Static)
        result.display = d.job.result is not None
        put("#result", json_block("Result", d.job.result, self.unfolded))
        put("#history", history_text(d, now))
        # The footer is rebuilt (recomposed) on every refresh_bindings: only when what
        # check_action answers can have changed.
        offered = (d.job.state, (d.job.wait or {}).get("kind"), bool(d.steps), self._waited_id(), self._fan_in())
        if offered != self._offered:
            self._offered = offered
            self.refresh_bindings()

    def _put(self, selector: str, content: Text) -> None:
        update_changed(self.query_one(selector, Static), content)

    # --- actions ---------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        allowed = super().check_action(action, parameters)
        if not allowed or action in ("back", "why", "unfold", "copy_id", "logs") or self.detail is None:
            return allowed
        j = self.detail.job
        if action == "retry":
            return j.state is JobState.DEAD
        if action == "retry_from_step":
            return j.state in (JobState.DEAD, JobState.COMPLETED) and bool(self.detail.steps)
        if action == "cancel":
            return j.state in _LIVE
        if action == "cancel_children":
            return any(a.state in _LIVE for a in self.detail.awaited)
        if action == "retry_children":
            return j.state is JobState.DEAD and (self._dead_below() > 0 or self._timed_out())
        if action == "discard":
            return j.state is JobState.DEAD
        if action == "send_event":
            return j.state is JobState.SUSPENDED and (j.wait or {}).get("kind") == "event"
        if action == "open_waited":
            return self._waited_id() is not None
        if action == "open_fan_in":
            return self._fan_in() is not None
        return allowed

    def _waited_id(self) -> str | None:
        """The job of this fan-in's wait worth opening (waited_target)."""
        target = waited_target(self.detail) if self.detail else None
        return None if target is None else target.id

    def _fan_in(self) -> str | None:
        """The first fan-in that waits for this job (its why names it), else the job whose fan-out
        enqueued it."""
        d = self.detail
        if d is None:
            return None
        waiting = next((c.job_id for c in d.why.causes if c.kind == "awaited" and c.job_id), None)
        return waiting or (d.parents[0][0].id if d.parents else None)

    def action_open_waited(self) -> None:
        if (job_id := self._waited_id()) is not None:
            self.navigate("job", job_id=job_id)

    def action_open_fan_in(self) -> None:
        if (job_id := self._fan_in()) is not None:
            self.navigate("job", job_id=job_id)

    def action_copy_id(self) -> None:
        self.copy_id(self.job_id)

    def action_why(self) -> None:
        self.open_why_job(self.job_id)

    def action_logs(self) -> None:
        self.navigate("logs", job_id=self.job_id)

    def action_unfold(self) -> None:
        self.unfolded = not self.unfolded
        if self.detail is not None:
            self.on_job_loaded(JobLoaded(self.detail))

    def _dead_below(self) -> int:
        return sum(a.state is JobState.DEAD for a in self.detail.awaited) if self.detail else 0

    def _timed_out(self) -> bool:
        """Whether a wait for jobs timed out: a plain retry answers that again at once."""
        return any(waited_out(s) for s in self.detail.steps) if self.detail else False

    def action_retry(self) -> None:
        if self.detail:
            # A fan-out it did not wait for replays as its enqueue: nothing answers a dead job again.
            replayed = self._dead_below() if self.detail.awaited_as != "enqueued" else 0
            self.retry_job(self.detail.job.id, self.detail.job.name, replayed, timed_out=self._timed_out())

    def action_retry_children(self) -> None:
        if self.detail:
            self.retry_with_children(self.detail.job.id, self.detail.job.name, timed_out=self._timed_out())

    def action_cancel(self) -> None:
        if self.detail:
            j = self.detail.job
            self.cancel_job(j.id, j.name, j.state.value, sum(a.state in _LIVE for a in self.detail.awaited))

    def action_cancel_children(self) -> None:
        if self.detail:
            j = self.detail.job
            self.cancel_with_children(j.id, j.name, j.state.value)

    def action_discard(self) -> None:
        if self.detail:
            self.discard_job(self.detail.job.id, self.detail.job.name, then_back=True)

    def action_retry_from_step(self) -> None:
        if self.detail:
            names = [s.name for s in sorted(self.detail.steps, key=lambda s: s.seq)]
            self.retry_from_step_flow(self.detail.job.id, list(dict.fromkeys(names)))

    def action_send_event(self) -> None:
        if self.detail:
            wait = self.detail.job.wait or {}
            self.send_event(str(wait.get("event", "")), wait.get("match") or {}, self.detail.job.tenant)


__all__ = ["JobDetailScreen", "short_id"]
