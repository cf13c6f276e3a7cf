"""The application's side of the transactional outbox: ``eng.stage(conn, job, input)``.

A stage writes the enqueue on the CALLER's connection, inside the caller's transaction (I16): the
caller's rollback leaves no trace, its commit makes the job certain to be published by a relay
(engine/services/relay.py). Everything that can be refused is refused before a statement reaches
that connection: in PostgreSQL one failed statement aborts the whole transaction, and the caller's
order would be lost to our bad input. With no transaction open (autocommit, or ``None``) there is
nothing to join: the stage publishes directly, unless the outbox mode is ``required``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from engine.drivers.base_outbox import OutboxTarget
from engine.errors import X_INVALID_ARGUMENT, X_OUTBOX_NO_TX, JobsError
from engine.outbox_types import Staged
from engine.tracing import carried
from engine.types import NewJob

if TYPE_CHECKING:
    from engine.api import Engine, Enqueue

MODES = ("direct", "required")


def check_mode(mode: object) -> str:
    """``direct`` (the default: outside a transaction a stage publishes directly) or ``required``
    (outside a transaction a stage is refused, X_OUTBOX_NO_TX)."""
    if mode not in MODES:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"outbox_mode={mode!r} is not one of {', '.join(MODES)}",
            fix="connect(dsn, outbox_mode='required')",
        )
    return str(mode)


def _prepare(
    eng: Engine, tx: object, specs: Iterable[Enqueue], *, want_async: bool
) -> tuple[list[Enqueue], list[NewJob], OutboxTarget | None]:
    """Every check, before anything is written: the rows (job handle, JSON input, delay, tenant,
    key), then the transaction the driver is asked to join."""
    batch = list(specs)
    rows = eng._new_jobs(batch, eng.clock.now())
    target = None if tx is None else eng.driver.outbox_target(tx)
    if target is not None and target.is_async is not None and target.is_async != want_async:
        call = "await eng.astage(conn, job, input)" if target.is_async else "eng.stage(conn, job, input)"
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"{'an async' if target.is_async else 'a sync'} connection was given to "
            f"{'stage' if not want_async else 'astage'}(), which cannot write on it",
            fix=call,
        )
    if (target is None or not target.in_transaction) and eng.outbox_mode == "required":
        raise JobsError(
            X_OUTBOX_NO_TX,
            cause="stage() was called with no transaction open on "
            + ("None" if tx is None else f"the {type(tx).__name__} (autocommit)")
            + ", and outbox_mode='required' refuses to publish outside one",
            fix="with conn.transaction(): eng.stage(conn, job, input)",
        )
    return batch, rows, target


@contextmanager
def _sending(eng: Engine, rows: list[NewJob]) -> Iterator[list[NewJob]]:
    """The rows to stage, inside a ``send`` span whose context they carry when the engine traces
    (engine/tracing.py): the job the relay publishes later runs in the stager's trace."""
    if eng.tracing is None:
        yield rows
        return
    with eng.tracing.send(rows, len(rows)) as carrier:
        yield carried(rows, carrier)


def stage_many(eng: Engine, tx: object, specs: Iterable[Enqueue]) -> list[Staged]:
    batch, rows, target = _prepare(eng, tx, specs, want_async=False)
    if not rows:
        return []
    if target is None or not target.in_transaction:  # nothing to join: publish now (mode 'direct')
        return [Staged(r.id, r) for r in eng.enqueue_many(batch)]
    with _sending(eng, rows) as traced:
        target.stage(jobs=traced, now=eng.clock.now())
    return [Staged(r.id) for r in rows]


async def astage_many(eng: Engine, tx: object, specs: Iterable[Enqueue]) -> list[Staged]:
    batch, rows, target = _prepare(eng, tx, specs, want_async=True)
    if not rows:
        return []
    if target is None or not target.in_transaction:
        return [Staged(r.id, r) for r in await eng.aenqueue_many(batch)]
    with _sending(eng, rows) as traced:
        await target.astage(jobs=traced, now=eng.clock.now())
    return [Staged(r.id) for r in rows]


__all__ = ["MODES", "Staged", "astage_many", "check_mode", "stage_many"]
