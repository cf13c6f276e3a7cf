"""The audit log's actions: every operator action that changed something adds one entry, in the
transaction of its change (sql/migrations/0022_audit_log.sql, both drivers' ``audit_*``), read
newest first by ``Operator.audit``, ``jobsctl audit`` and the console's Activity screen.

``ACTIONS`` names each entry's ``action`` and what its ``target`` is; a filter naming another is
refused with the names it may have meant. A backfill pass's cancel is its pass job's cancel, so it
is a ``job.cancel`` entry, the pass's job id its target and ``backfill:NAME`` its detail's name.
A sent event is not an entry: events are the application's traffic (a payment arrived), often
many a second, and each is a durable row of its own (jobs.event) naming who sent it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from engine.errors import X_INVALID_ARGUMENT, JobsError

ACTIONS: dict[str, str] = {
    "queue.pause": "a queue paused (target: the queue)",
    "queue.resume": "a queue resumed (target: the queue)",
    "worker.drain": "a worker asked to drain (target: its id)",
    "job.retry": "a dead job retried (target: its id)",
    "job.retry_from_step": "a job retried from a step (target: its id; detail: the step)",
    "job.cancel": "a job cancelled (target: its id)",
    "job.discard": "a dead job discarded (target: its id)",
    "bulk.retry": "a bulk retry run (target: its filter; detail: how many changed)",
    "bulk.cancel": "a bulk cancel run (target: its filter; detail: how many changed)",
    "bulk.discard": "a bulk discard run (target: its filter; detail: how many changed)",
    "schedule.pause": "a cron task paused (target: the task)",
    "schedule.resume": "a cron task resumed (target: the task)",
    "schedule.trigger": "a cron task triggered now (target: the task; detail: the job)",
    "backfill.start": "a backfill pass started (target: the backfill; detail: its pass)",
    "backfill.retry": "a backfill pass retried (target: the backfill; detail: its pass)",
}

RETENTION = 365 * 86400.0  # seconds an entry is kept by default (MaintenanceConfig.audit_retention)
PAGE = 50  # entries a read answers by default
LONGEST_PAGE = 1000


def check_action(action: str | None, *, fix: str = "jobsctl audit --action queue.pause") -> str | None:
    """``action`` when it names one of ``ACTIONS`` (None: any); otherwise X_INVALID_ARGUMENT with
    the names it may have meant."""
    if action is None:
        return None
    if not isinstance(action, str) or action not in ACTIONS:
        import difflib

        close = difflib.get_close_matches(str(action), list(ACTIONS), n=3, cutoff=0.5)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"the audit log has no action {action!r}{hint} (one of: {', '.join(ACTIONS)})",
            fix=fix if not close else fix.replace("queue.pause", close[0]),
        )
    return action


# An entry's detail as an on-call reader needs it (what ACTIONS say each detail holds): each known
# key in words, or None to leave it out (an id no one types, an option off).
_WORDS: dict[str, Callable[[Any, Callable[[str], str]], str | None]] = {
    "name": lambda v, _: str(v),
    "changed": lambda v, _: f"{v:,} changed" if isinstance(v, int) else f"changed {v}",
    "planned": lambda v, _: f"of {v:,} planned" if isinstance(v, int) else f"planned {v}",
    "error": lambda v, _: f"failed on {v}",
    "stopped": lambda v, _: "stopped before the end" if v is True else None,
    "from": lambda v, _: f"was {v}",
    "step": lambda v, _: f"from step {v}",
    "environment": lambda v, _: f"in {v}",
    "write": lambda v, _: "a write pass" if v is True else "a dry-run pass" if v is False else None,
    "forced": lambda v, _: "forced" if v is True else None,
    "job_id": lambda v, short: f"job {short(str(v))}",
    "pass": lambda v, _: None,  # the backfill ledger's row, shown with the backfill
    "key": lambda v, _: None,  # a trigger's idempotency key
    "queue": lambda v, _: None,  # a job's queue: its name says enough in a line
    "batches": lambda v, _: None,
    "children": lambda v, _: "with the jobs below" if v is True else None,
    "discarded": lambda v, _: f"{len(v)} stored step(s) discarded" if isinstance(v, list) and v else None,
}
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)


def detail_words(detail: dict[str, Any] | None, short: Callable[[str], str]) -> list[str]:
    """An entry's detail in short words ("12 changed", "of 12 planned"), as `jobsctl audit` and the
    console say it: a key without words of its own as "key value" (``short`` shows an id), a flag
    that is off left out."""
    words = []
    # The job's name first: a database's JSON document keeps its keys in an order of its own.
    for key, value in sorted((detail or {}).items(), key=lambda kv: kv[0] != "name"):
        say = _WORDS.get(key)
        if say is not None:
            said = say(value, short)
        elif value is None or value is False:
            said = None
        elif value is True:
            said = str(key).replace("_", " ")
        else:
            shown = value if isinstance(value, (str, int, float)) else json.dumps(value, default=str)
            if isinstance(shown, str) and _UUID.fullmatch(shown):
                shown = short(shown)
            said = f"{str(key).replace('_', ' ')} {shown}"
        if said:
            words.append(said)
    return words
