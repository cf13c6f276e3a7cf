"""The audit log's actions: every operator action that changed something adds one entry, in the
transaction of its change (sql/migrations/0022_audit_log.sql, both drivers' ``audit_*``), read
newest first by ``Operator.audit``, ``jobsctl audit`` and the console's Activity screen.

``ACTIONS`` names each entry's ``action`` and what its ``target`` is; a filter naming another is
refused with the names it may have meant. A backfill pass's cancel is its pass job's cancel, so it
is a ``job.cancel`` entry, the pass's job id its target and ``backfill:NAME`` its detail's name."""

from __future__ import annotations

from engine.errors import X_INVALID_ARGUMENT, JobsError

ACTIONS: dict[str, str] = {
    "queue.pause": "a queue paused (target: the queue)",
    "queue.resume": "a queue resumed (target: the queue)",
    "worker.drain": "a worker asked to drain (target: its id)",
    "event.send": "an event sent (target: its name)",
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
