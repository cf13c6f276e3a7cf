"""One pass of a backfill, run as a durable job: one step per batch (I9), so a pass resumed on
another worker replays the batches it finished from their stored cursors and reads on from the
batch it was on: never from the start, never skipping one.

A batch's step reads the rows after the previous cursor, hands them to ``handle`` (write passes
only) and commits the app's connection; the step then stores the cursor. A worker that dies
between that commit and the step's write leaves the batch to be read again, so a handle must be
idempotent, which the usual source is by construction (``where new_column is null``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from engine.errors import X_ABORTED, X_BACKFILL_MIGRATION_PENDING, X_BACKFILL_STALLED, JobsError
from engine.records import BackfillRun
from engine.retry import error_text, register_error_retry
from engine.types import JobState

if TYPE_CHECKING:
    from engine.backfills.declare import BackfillDefinition
    from engine.runtime.context import JobContext

# Neither is mended by running the pass again: the predicates, or the migrations, must change first.
register_error_retry({X_BACKFILL_STALLED: "terminal", X_BACKFILL_MIGRATION_PENDING: "terminal"})


class Pacer:
    """The ``rate`` throttle: at most ``rate`` batches a second, each wait raced against the run's
    signal, so a cancel (or a drain) reaches a waiting pass at once."""

    def __init__(self, rate: float | None, clock: Any, signal: Any) -> None:
        self.interval = 0.0 if rate is None else 1.0 / rate
        self.clock, self.signal = clock, signal
        self.last: float | None = None

    async def wait(self) -> None:
        now = self.clock.monotonic()
        if self.interval and self.last is not None:
            left = self.interval - (now - self.last)
            if left > 0:
                sleeping = asyncio.ensure_future(self.clock.sleep(left))
                stopped = asyncio.ensure_future(self.signal.wait())
                try:
                    await asyncio.wait([sleeping, stopped], return_when=asyncio.FIRST_COMPLETED)
                finally:
                    sleeping.cancel()
                    stopped.cancel()
                self.signal.raise_if_aborted("next batch")
        self.last = self.clock.monotonic()


def stalled_error(d: BackfillDefinition, *, swept: int, remaining: int) -> JobsError:
    return JobsError(
        X_BACKFILL_STALLED,
        cause=f"backfill {d.backfill!r} swept {swept} rows, exhausted its source, and count() still matches "
        f"{remaining}: a WHERE the sweep narrows and the count does not is what leaves rows behind",
        fix=f"make count() select on exactly what source selects on in backfill {d.backfill!r} ({d.module})",
    )


def check_migration(d: BackfillDefinition, conn: Any) -> None:
    """The ``requires`` gate, on the application's connection."""
    if d.requires is None or d.owner.migrations is None:
        return
    applied = d.owner.migrations(conn)
    if d.requires not in applied:
        command = getattr(d.owner.migrations, "migrate_command", "alembic upgrade head")
        raise JobsError(
            X_BACKFILL_MIGRATION_PENDING,
            cause=f"backfill {d.backfill!r} requires migration {d.requires!r}, which the app's migration "
            f"ledger does not record as applied ({len(applied)} applied)",
            fix=command,
        )


def _finish_tx(conn: Any, commit: bool) -> None:
    if conn is None:
        return
    done = getattr(conn, "commit" if commit else "rollback", None)
    if callable(done):
        done()


async def _sweep(
    d: BackfillDefinition, conn: Any, after: Any, number: int, write: bool, held: Callable[[int], Awaitable[bool]]
) -> dict[str, Any]:
    """One batch: read, handle (write passes), then commit only while the pass still holds its
    job (``held`` records the batch's totals in the ledger, fenced on the claim): a batch that a
    cancel or a re-delivery overtook is rolled back. Its answer is the batch's stored step."""
    from engine.backfills.declare import Batch, is_async_handle

    def read_and_handle() -> tuple[list[Any], Any]:
        # One hop to the thread for the read and a sync handle: a batch's fixed cost is what a
        # sweep at an unlimited rate pays 1,000 rows at a time.
        rows, cursor = d.source.read(conn, after=after, size=d.batch_size)
        if rows and write and not is_async_handle(d.handle):
            d.handle(Batch(list(rows), conn, number, cursor))
        return rows, cursor

    try:
        rows, cursor = await asyncio.to_thread(read_and_handle)
        if rows and write and is_async_handle(d.handle):
            await d.handle(Batch(list(rows), conn, number, cursor))
        if rows and not await held(len(rows)):
            raise JobsError(
                X_ABORTED,
                cause=f"batch {number} of backfill {d.backfill!r} was rolled back: its pass no longer holds its "
                "job (cancelled or re-delivered)",
                fix=d.command("--status"),
            )
        await asyncio.to_thread(_finish_tx, conn, write)
    except BaseException:
        with contextlib.suppress(Exception):
            await asyncio.to_thread(_finish_tx, conn, False)
        raise
    return {"rows": len(rows), "cursor": cursor if rows else after}


def _count(d: BackfillDefinition, conn: Any) -> int:
    try:
        n = d.count(conn)
    finally:
        _finish_tx(conn, False)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise JobsError(
            "X_INVALID_DEFINITION",
            cause=f"count() of backfill {d.backfill!r} answered {n!r}, not a whole number >= 0",
            fix="count=lambda conn: conn.execute('select count(*) from t where c is null').fetchone()[0]",
        )
    return n


def _plan(d: BackfillDefinition, conn: Any) -> int:
    check_migration(d, conn)
    return _count(d, conn)


async def run_pass(d: BackfillDefinition, ctx: JobContext, inp: dict[str, Any]) -> dict[str, Any]:
    step = ctx.step
    driver, claim, clock = step.driver, step.claim, step.clock
    run_id, write = str(inp["run"]), bool(inp.get("write"))
    begun = clock.now()  # this run's start, its count included: its rate is read from here
    swept = batches = 0
    conn = await asyncio.to_thread(d.owner.open_connection)
    try:
        planned = await step.run("plan", lambda: asyncio.to_thread(_plan, d, conn))
        await driver.backfill_open(
            run=BackfillRun(
                id=run_id,
                name=d.backfill,
                environment=str(inp["environment"]),
                job_id=ctx.id,
                status="queued",
                dry_run=not write,
                forced=bool(inp.get("forced")),
                started_at=clock.now(),
                app_version=inp.get("app_version"),
                actor=inp.get("actor"),
            )
        )
        await driver.backfill_begin(run_id=run_id, planned=planned, now=begun)
        pacer, cursor, number = Pacer(d.rate, clock, ctx.signal), None, 0
        while True:
            number += 1
            ran: list[bool] = []

            async def held(rows: int, mark: list[bool] = ran, done: int = swept, n: int = batches) -> bool:
                mark.append(True)
                return await driver.backfill_progress(run_id=run_id, claim=claim, swept=done + rows, batches=n + 1)

            async def batch(after: Any = cursor, n: int = number) -> dict[str, Any]:
                return await _sweep(d, conn, after, n, write, held)

            res = await step.run(f"batch-{number}", batch)
            if res["rows"] == 0:
                break
            swept, batches, cursor = swept + int(res["rows"]), batches + 1, res["cursor"]
            if ran:  # a replayed batch was paced when it first ran
                await pacer.wait()
        remaining = await asyncio.to_thread(_count, d, conn)
        if (write and remaining > 0) or (not write and swept < remaining):
            raise stalled_error(d, swept=swept, remaining=remaining)
        await driver.backfill_finish(
            run_id=run_id, outcome="completed", swept=swept, batches=batches, error=None, now=clock.now()
        )
        return {"run": run_id, "swept": swept, "batches": batches, "remaining": remaining, "write": write}
    except BaseException as exc:
        if getattr(exc, "code", None) == X_ABORTED and not ctx.signal.aborted:
            # The fence refused the batch: an operator's cancel, seen before the lease renewal says so.
            with contextlib.suppress(Exception):
                row = await driver.job_get(job_id=ctx.id)
                if row is not None and row.state is JobState.CANCELLED:
                    ctx.signal.abort("cancelled")
        outcome = _outcome(exc, ctx.signal.reason)
        if outcome is not None:
            with contextlib.suppress(Exception):
                await driver.backfill_finish(
                    run_id=run_id,
                    outcome=outcome,
                    swept=swept or None,
                    batches=batches or None,
                    error=None if outcome == "cancelled" else error_text(exc),
                    now=clock.now(),
                )
        raise
    finally:
        if conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(conn.close)


def _outcome(exc: BaseException, abort_reason: str | None) -> Any:
    """What the ledger says of a pass that stopped: None leaves it running (a drain or a lost
    lease hands the pass to another worker, which continues the same row)."""
    if abort_reason == "cancelled":
        return "cancelled"
    if abort_reason in ("drain", "lease-lost") or isinstance(exc, asyncio.CancelledError):
        return None
    if getattr(exc, "code", None) == X_ABORTED:
        return None  # re-delivered: its new holder writes the ledger
    if getattr(exc, "code", None) == X_BACKFILL_STALLED:
        return "stalled"
    return "failed"
