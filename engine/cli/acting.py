"""What every operator command shares: the audited Operator, its answer printed a line a job, the
question before a change, and the exit code of a clear no-op."""

from __future__ import annotations

import sys
from typing import Any

import typer

from engine.cli.reads import console, emit

EXIT_NOOP = 5  # the action changed nothing (already final, already paused, already asked to drain)
ACTOR_HELP = "who the audit trail names (default $JOBS_ACTOR or user@host)"
ID_HELP = "the job's id, or a unique short id (6+ hex digits of its head or tail)"


def operator(eng: Any, actor: str | None) -> Any:
    """The engine's Operator, audited as ``actor`` (None: $JOBS_ACTOR, else user@host)."""
    return eng.operator(actor=actor or None)


def result(res: Any, json_out: bool) -> None:
    if json_out:
        emit(res)
    else:
        said(res)
    if not res.changed:
        raise typer.Exit(EXIT_NOOP)


def said(res: Any) -> None:
    for r in (res, *res.also):  # with its children: the job, then each job below it
        verb = "done" if r.changed else "nothing changed"
        console().print(
            f"{'' if r is res else '  '}{r.action} {r.job_id}: {verb} ({r.previous.value} -> {r.state.value})"
            + (f"; {r.reason}" if r.reason else "")
        )


def confirmed(question: str) -> bool:
    """A yes to ``question`` on stdin. No answer is a no: its end (a script with nothing piped
    in, a closed terminal) or Ctrl-C at the prompt, which click would make an exit 1 "Aborted!"."""
    try:
        return typer.confirm(question, default=False)
    except (typer.Abort, EOFError):
        sys.stdout.write("\n")  # the prompt's line, left open
        return False
