"""What every operator action shares: who takes it (the audit's actor), read-only mode, the
tenant scope (I25), the one id check (engine/introspect/base.py) and the dry run's time budget."""

from __future__ import annotations

import getpass
import os
import socket
from typing import Any

from engine.errors import X_INVALID_ARGUMENT, X_READ_ONLY, JobsError
from engine.ids import IdFactory
from engine.introspect.base import EngineView
from engine.options import timeout_rule, timeout_seconds
from engine.text import check_note, check_text

DEFAULT_BATCH = 500
DEFAULT_PLAN_BUDGET = 5.0  # seconds a bulk action's dry run (or a short id's lookup) may take


def default_actor() -> str:
    """Who an action is recorded as when the caller names no one: $JOBS_ACTOR, else user@host."""
    if os.environ.get("JOBS_ACTOR", "").strip():
        return os.environ["JOBS_ACTOR"].strip()
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


class OperatorBase(EngineView):
    def __init__(
        self,
        engine: Any,
        *,
        actor: str | None = None,
        read_only: bool = False,
        tenant: str | None = None,
        budget: float = DEFAULT_PLAN_BUDGET,
        clock: Any = None,
        read_only_fix: str = "Operator(engine, actor=..., read_only=False)",
        note_fix: str = "note='INC-7: smtp fixed'",
    ) -> None:
        check_flags(read_only=read_only)
        super().__init__(engine, clock=clock, tenant=tenant)
        if not timeout_seconds(budget):  # it becomes the dry run's statement timeout
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"budget={budget!r} must be {timeout_rule()}: it bounds the dry run's statements",
                fix="Operator(engine, actor=..., budget=5.0)",
            )
        self.budget_ms = max(1, int(budget * 1000))  # bounds the dry run, a read over many rows
        if actor is None:
            actor = default_actor()
        if not isinstance(actor, str) or not actor.strip():
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"actor={actor!r}: every action names who took it",
                fix="Operator(engine, actor='alice')",
            )
        check_text(actor, what="actor", fix="Operator(engine, actor='alice')")
        self.actor = actor.strip()
        self.read_only = read_only
        self._read_only_fix = read_only_fix
        self._note_fix = note_fix  # how the caller gives a note: a keyword here, --note on the CLI
        self.ids: IdFactory = getattr(engine, "ids", None) or IdFactory(self.clock)

    def _writable(self, what: str, note: str | None = None, **flags: bool) -> None:
        """Refuse a mutating action in read-only mode, a note that is not a str (or None) or that
        PostgreSQL cannot store, and a flag that is not a bool. Every action hands its note and its
        flags (``children=``, ``create=``) here first, so each is refused before anything changes."""
        check_flags(**flags)
        check_note(note, what=what, fix=self._note_fix)
        if self.read_only:
            raise JobsError(
                X_READ_ONLY, cause=f"{what} was refused: this operator is read-only", fix=self._read_only_fix
            )


def check_flags(**flags: object) -> None:
    """Each flag a real bool: a truthy word (``children='no'``) would act on what it reads as yes."""
    for flag, value in flags.items():
        if not isinstance(value, bool):
            raise JobsError(X_INVALID_ARGUMENT, cause=f"{flag}={value!r} is not True or False", fix=f"{flag}=True")
