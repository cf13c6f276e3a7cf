"""The one table of console actions: it drives the key bindings, the command palette and the
help screen, so a key, its palette entry and its help line cannot disagree.

``scope`` is "global" (bound on the App) or a screen's name (bound on that screen). A mutating
action is never offered in read-only mode (hidden from the footer, the palette and refused by
``check_action``); the engine refuses it too.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding, BindingType

# What a discard does, in the words `jobsctl discard` answers with: every help line and confirm
# about a discard says it so.
from engine.projections import DISCARD_EFFECT as DISCARD_EFFECT


@dataclass(frozen=True)
class Action:
    key: str
    action: str  # the Textual action string, e.g. "goto('jobs')"
    title: str  # the palette entry and the footer label
    help: str  # one line for the help screen and the palette
    scope: str = "global"
    mutating: bool = False
    footer: bool = True
    key_display: str | None = None

    @property
    def mode(self) -> str | None:
        """The screen a NAV entry goes to (``goto('jobs')`` -> ``jobs``)."""
        if not self.action.startswith("goto("):
            return None
        return self.action[len("goto('") : -2]

    @property
    def name(self) -> str:
        """The action's method name without parameters (what ``check_action`` receives)."""
        return self.action.split("(", 1)[0]


# Screens reachable from anywhere, in nav order. A new screen is one entry here plus its class in
# console/screens/__init__.py.
NAV: tuple[Action, ...] = (
    Action(
        "1", "goto('overview')", "Overview", "queues: state counts, oldest waiting, throughput, workers", footer=False
    ),
    Action("2", "goto('jobs')", "Jobs", "filterable, paginated list of jobs; Enter opens one", footer=False),
    Action(
        "3",
        "goto('dead_letters')",
        "Dead letters",
        "dead jobs grouped by name, error code and stop reason; retry, cancel or discard",
        footer=False,
    ),
    Action(
        "4", "goto('workers')", "Workers", "hosts, pids, queues, slots, heartbeats (stale marked); drain", footer=False
    ),
    Action(
        "5", "goto('schedules')", "Schedules", "cron tasks: next and last run, the leader; pause, trigger", footer=False
    ),
    Action(
        "6",
        "goto('outbox')",
        "Outbox",
        "staged rows: backlog, age trend, relays, claims, failing rows; why one is not published",
        footer=False,
    ),
    Action(
        "7",
        "goto('backfills')",
        "Backfills",
        "sweeps per environment: progress, the gate, the ledger; start, cancel, retry",
        footer=False,
    ),
)

ACTIONS: tuple[Action, ...] = NAV + (
    Action("question_mark", "help", "Help", "this list of keys", key_display="?"),
    Action("r", "refresh_now", "Refresh", "reload the screen now", footer=False),
    Action("a", "activity", "Activity", "this session's actions; the audit log: who did what, when, why", footer=False),
    Action("plus", "interval(1)", "Slower", "refresh less often (interval steps up)", key_display="+", footer=False),
    Action(
        "minus", "interval(-1)", "Faster", "refresh more often (interval steps down)", key_display="-", footer=False
    ),
    Action(
        "s",
        "sort",
        "Sort",
        "sort the table by its next column, then back to the order it came in (or click a header)",
        footer=False,
    ),
    Action("S", "sort_reverse", "Reverse sort", "reverse the table's sort", key_display="S", footer=False),
    Action("q", "quit", "Quit", "leave the console"),
    Action("ctrl+c", "quit", "Quit", "leave the console (as in any terminal program)", footer=False, key_display="^c"),
    # overview
    Action("enter", "open_queue", "Jobs of queue", "list the selected queue's jobs", scope="overview"),
    Action("y", "why_queue", "Why", "why is the selected queue not draining?", scope="overview"),
    Action(
        "l", "logs", "Logs", "the selected queue's live engine events (when the engine runs here)", scope="overview"
    ),
    Action(
        "g",
        "chart",
        "Chart",
        "the selected queue's hour: completed, dead and wait per minute, as bars",
        scope="overview",
    ),
    Action("p", "toggle_pause", "Pause/resume", "pause or resume the selected queue", scope="overview", mutating=True),
    # jobs, in the order the footer keeps them when it is narrow: find, ask why, act, read; then
    # the rarer ones (the pager line names t, n and b too)
    Action("escape", "back", "Back", "leave the filter bar, clear the marks, or go back", scope="jobs"),
    Action("enter", "open_job", "Open", "open the selected job", scope="jobs"),
    Action(
        "slash",
        "filter",
        "Filter",
        "filter: queue= state= name= tenant= code= input.FIELD=V, or an id/key",
        scope="jobs",
        key_display="/",
    ),
    Action("y", "why", "Why", "why is the selected job not running?", scope="jobs"),
    Action("x", "retry", "Retry", "retry the selected (or marked) dead jobs", scope="jobs", mutating=True),
    Action("c", "cancel", "Cancel", "cancel the selected (or marked) live jobs", scope="jobs", mutating=True),
    Action("l", "logs", "Logs", "the selected job's attempts, history and live engine events", scope="jobs"),
    Action(
        "d",
        "discard",
        "Discard",
        f"discard the selected (or marked) dead jobs: each deleted; {DISCARD_EFFECT}",
        scope="jobs",
        mutating=True,
    ),
    Action(
        "t",
        "next_state",
        "State",
        "show one state at a time: parked, suspended, dead, running, delayed, ready, then all",
        scope="jobs",
    ),
    Action("n", "page(1)", "Next page", "the next (older) page", scope="jobs"),
    Action("b", "page(-1)", "Prev page", "the previous (newer) page", scope="jobs"),
    Action(
        "space",
        "mark",
        "Mark",
        "mark or unmark the row; x, c and d then act on the marked rows (Escape clears the marks)",
        scope="jobs",
        footer=False,
    ),
    Action("i", "copy_id", "Copy id", "copy the selected job's full id to the clipboard", scope="jobs", footer=False),
    Action(
        "X",
        "bulk('retry')",
        "Retry all",
        "retry every dead job matching the filter, every page (dry run first)",
        scope="jobs",
        mutating=True,
        key_display="X",
    ),
    Action(
        "C",
        "bulk('cancel')",
        "Cancel all",
        "cancel every live job matching the filter, every page (dry run first)",
        scope="jobs",
        mutating=True,
        key_display="C",
    ),
    Action(
        "D",
        "bulk('discard')",
        "Discard all",
        "discard every dead job matching the filter, every page (dry run first)",
        scope="jobs",
        mutating=True,
        key_display="D",
        footer=False,
    ),
    # job detail (each action is offered only in the job states it applies to)
    Action("escape", "back", "Back", "back to the previous screen", scope="job_detail"),
    Action("y", "why", "Why", "why is this job not running?", scope="job_detail"),
    Action("x", "retry", "Retry", "retry this dead job", scope="job_detail", mutating=True),
    Action("c", "cancel", "Cancel", "cancel this live job", scope="job_detail", mutating=True),
    Action(
        "d",
        "discard",
        "Discard",
        f"discard this dead job: deleted; {DISCARD_EFFECT}",
        scope="job_detail",
        mutating=True,
    ),
    Action("e", "send_event", "Send event", "send the event this job waits for", scope="job_detail", mutating=True),
    Action("l", "logs", "Logs", "this job's attempts, history and live engine events", scope="job_detail"),
    # Last of the footer's keys: where they do not all fit (a dead job with steps at 80 columns),
    # this is the one left out.
    Action(
        "f",
        "retry_from_step",
        "From step",
        "retry from a chosen step: it and the later ones run again, earlier ones replay",
        scope="job_detail",
        mutating=True,
    ),
    # Offered where something is folded ("… N more lines folded (u: unfold)"), in the text itself.
    Action(
        "u",
        "unfold",
        "Unfold",
        "show the long input, result and traceback whole; u again folds them back",
        scope="job_detail",
        footer=False,
    ),
    Action("i", "copy_id", "Copy id", "copy this job's full id to the clipboard", scope="job_detail", footer=False),
    # Offered in the screen's own text, where they apply: "w: open ...", "C: cancel with them"
    # and "X: retry with them" under the jobs a fan-in waits for, "o: open ..." after the why of a
    # job a fan-in waits for and beside the parent that enqueued it.
    Action(
        "w",
        "open_waited",
        "Waited job",
        "open the job a fan-in waits on that holds it up, else one of its jobs that failed",
        scope="job_detail",
        footer=False,
    ),
    Action(
        "o",
        "open_fan_in",
        "Its parent",
        "open the fan-in that waits for this job, else the job whose fan-out enqueued it",
        scope="job_detail",
        footer=False,
    ),
    Action(
        "X",
        "retry_children",
        "Retry with children",
        "retry this dead job and every dead job below it; its wait on them looks at them afresh",
        scope="job_detail",
        mutating=True,
        key_display="X",
        footer=False,
    ),
    Action(
        "C",
        "cancel_children",
        "Cancel with children",
        "cancel this job and every live job below it (those its steps enqueued or waited for, and theirs)",
        scope="job_detail",
        mutating=True,
        key_display="C",
        footer=False,
    ),
    # dead letters
    Action("escape", "back", "Back", "leave the filter bar, clear the marks, or go back", scope="dead_letters"),
    Action("enter", "open_group", "Jobs of group", "list the dead jobs of the selected group", scope="dead_letters"),
    Action(
        "slash",
        "filter",
        "Filter",
        "filter: queue= name= tenant= code= stop= input.FIELD=V, or an id/key",
        scope="dead_letters",
        key_display="/",
    ),
    Action(
        "space",
        "mark",
        "Mark",
        "mark or unmark the group; x, c and d then act on every marked group (Escape clears the marks)",
        scope="dead_letters",
        footer=False,
    ),
    Action(
        "x",
        "bulk('retry', 'group')",
        "Retry group",
        "retry every job of the selected (or marked) groups (dry run first)",
        scope="dead_letters",
        mutating=True,
    ),
    # Discard before cancel: at 80 columns the footer keeps retry and discard, an on-call's
    # actions here, and leaves out cancel (the live jobs still failing like a group), the rarer.
    Action(
        "d",
        "bulk('discard', 'group')",
        "Discard group",
        f"discard every job of the selected (or marked) groups (dry run first): each deleted; {DISCARD_EFFECT}",
        scope="dead_letters",
        mutating=True,
    ),
    Action(
        "c",
        "bulk('cancel', 'group')",
        "Cancel group",
        "cancel the live jobs still failing like the selected (or marked) groups (dry run first)",
        scope="dead_letters",
        mutating=True,
    ),
    Action(
        "X",
        "bulk('retry', 'all')",
        "Retry all",
        "retry everything matching the filter (dry run first)",
        scope="dead_letters",
        mutating=True,
        key_display="X",
    ),
    Action(
        "C",
        "bulk('cancel', 'all')",
        "Cancel all",
        "cancel the live jobs still failing like every group shown (dry run first)",
        scope="dead_letters",
        mutating=True,
        key_display="C",
    ),
    Action(
        "D",
        "bulk('discard', 'all')",
        "Discard all",
        "discard every dead job matching the filter (dry run first)",
        scope="dead_letters",
        mutating=True,
        key_display="D",
        footer=False,
    ),
    # why and workers
    Action("escape", "back", "Back", "back to the previous screen", scope="why"),
    Action("escape", "back", "Back", "clear the marks, or go back", scope="workers"),
    Action(
        "space",
        "mark",
        "Mark",
        "mark or unmark the worker; d then asks every marked worker to drain (Escape clears the marks)",
        scope="workers",
        footer=False,
    ),
    Action("l", "logs", "Logs", "the selected worker's record and live engine events", scope="workers"),
    Action(
        "d",
        "drain",
        "Drain",
        "ask the selected (or marked) workers to stop claiming and drain",
        scope="workers",
        mutating=True,
    ),
    # schedules
    Action("escape", "back", "Back", "back to the previous screen", scope="schedules"),
    Action("enter", "open_last", "Last run", "open the job of the selected task's last run", scope="schedules"),
    Action("p", "toggle_task", "Pause/resume", "pause or resume the selected task", scope="schedules", mutating=True),
    Action(
        "t", "trigger", "Trigger", "enqueue an occurrence of the selected task now", scope="schedules", mutating=True
    ),
    Action("escape", "back", "Back", "back to the previous screen", scope="chart"),
    Action("escape", "back", "Back", "back to the previous screen", scope="logs"),
    # outbox: read-only by nature (a relay retries a failing row at its next claim, and takes a
    # lapsed claim's rows once the lease ends: there is nothing for an operator to push)
    Action("escape", "back", "Back", "back to the previous screen", scope="outbox"),
    # backfills
    Action("escape", "back", "Back", "back to the previous screen", scope="backfills"),
    Action("enter", "open_pass", "Open pass", "open the job of the selected backfill's latest pass", scope="backfills"),
    Action(
        "d",
        "dry_run",
        "Dry run",
        "start a dry run in the selected row's environment (writes nothing)",
        scope="backfills",
        mutating=True,
    ),
    Action(
        "w",
        "write",
        "Write pass",
        "start a write pass in the selected row's environment",
        scope="backfills",
        mutating=True,
    ),
    Action(
        "x",
        "retry_pass",
        "Retry",
        "continue the failed, cancelled or stalled pass from the batch it stopped on",
        scope="backfills",
        mutating=True,
    ),
    Action(
        "c",
        "cancel_pass",
        "Cancel",
        "cancel the running pass (its ledger row says so)",
        scope="backfills",
        mutating=True,
    ),
    # Last: the rarest, and the key a narrow footer leaves out.
    Action(
        "f",
        "force",
        "Force rerun",
        "rerun an applied backfill: a new write pass and a new ledger row",
        scope="backfills",
        mutating=True,
    ),
    Action("escape", "back", "Back", "back to the previous screen", scope="help"),
    Action("escape", "back", "Back", "back to the previous screen", scope="activity"),
)

SCOPES: tuple[tuple[str, str], ...] = (
    ("global", "Everywhere"),
    ("overview", "Overview"),
    ("jobs", "Jobs"),
    ("job_detail", "Job detail"),
    ("dead_letters", "Dead letters"),
    ("why", "Why is it not running?"),
    ("chart", "Queue chart"),
    ("logs", "Logs"),
    ("workers", "Workers"),
    ("schedules", "Schedules"),
    ("outbox", "Outbox"),
    ("backfills", "Backfills"),
)


def for_scope(scope: str) -> tuple[Action, ...]:
    return tuple(a for a in ACTIONS if a.scope == scope)


def bindings(scope: str) -> list[BindingType]:
    return [Binding(a.key, a.action, a.title, show=a.footer, key_display=a.key_display) for a in for_scope(scope)]


def footer_order(scope: str) -> tuple[str, ...]:
    """The footer's keys, most needed first: help (which the footer never leaves out), quit, then
    the screen's own in the table's order. A narrow footer leaves out what does not fit, from the
    end (console/widgets/footer.py), so a scope lists the keys an operator reaches for first."""
    return tuple(dict.fromkeys(a.action for a in for_scope("global") + for_scope(scope) if a.footer))


def mutating_names(scope: str) -> frozenset[str]:
    return frozenset(a.name for a in for_scope(scope) if a.mutating)


def offered(scope: str, *, read_only: bool) -> tuple[Action, ...]:
    """The actions a screen offers: its own and the global ones, mutating ones only when writable."""
    return tuple(a for a in for_scope(scope) + for_scope("global") if not (read_only and a.mutating))


def key_label(a: Action) -> str:
    return a.key_display or a.key
