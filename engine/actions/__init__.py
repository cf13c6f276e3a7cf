"""Each operator action, once: the Python API (engine.api), the CLI (engine/cli/ops.py) and the
console (console/source.py) all call this Operator, so an action means the same through each.

``Operator(engine, actor="alice")`` (actor default: $JOBS_ACTOR, else user@host):

- one job: ``retry``, ``retry_from_step``, ``cancel``, ``discard`` (engine/actions/jobs.py);
- many: ``plan`` (the dry run) and ``bulk`` of retry, cancel or discard (engine/actions/bulk.py),
  and ``retry_all_with_children`` (engine/actions/trees.py);
- the fleet: ``pause``, ``resume``, ``send_event``, ``drain_worker`` (engine/actions/fleet.py);
- ``audit``: the audit log, what every operator did, newest first (engine/actions/audit.py).

Every mutation that changes something is audited (who, when, the note: an audit log entry in the
transaction of the change, one a bulk run as it ends; a job's own history names it too), fenced on the state it applies to, and refused
with X_READ_ONLY by an operator built ``read_only=True``; ``tenant`` is a scope every action is
held to (I25). A job is named by its id or a unique short id (engine/introspect/base.py).
"""

from engine.actions.audit import AuditReads
from engine.actions.base import DEFAULT_BATCH, DEFAULT_PLAN_BUDGET, default_actor
from engine.actions.bulk import ACTIONS
from engine.actions.fleet import FleetActions
from engine.actions.jobs import checked_step_retry, key_held
from engine.actions.trees import TreeActions


class Operator(TreeActions, FleetActions, AuditReads):
    """The audited, fenced, tenant-aware operator actions (see the module's docstring)."""


__all__ = [
    "ACTIONS",
    "DEFAULT_BATCH",
    "DEFAULT_PLAN_BUDGET",
    "Operator",
    "checked_step_retry",
    "default_actor",
    "key_held",
]
