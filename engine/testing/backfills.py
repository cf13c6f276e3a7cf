"""Put a backfill pass in any state through the operations a pass itself uses.

A pass (engine/backfills/passes.py, ``run_pass``) is a job: it stores a ``plan`` step (count() at
its start), begins its ledger row, and for each batch reads the source after the last cursor,
hands the rows to ``handle`` (write passes), records the pass's totals fenced on its claim,
commits the app's connection and stores the ``batch-N`` step with the cursor. ``PassPlayer`` does
exactly that, one call at a time on the factory's clock, and settles the job as the worker would
(complete, or nack under the definition's retry policy). So a seeded world can hold a pass
running at batch 30, one that failed, a stalled one: states the engine can really be in, with
the application's rows really swept, and a real worker that later claims the pass replays its
stored batches and reads on from its cursor.

    control = BackfillControl(engine, bf, actor="alice", environment="production")
    p = await PassPlayer.start(Factory.of(engine), control, "accounts_plan_tier", write=True)
    await p.batches(30)        # 30 batches, 1/rate seconds apart on the clock
    await p.finish()           # completed, or stalled when count() still matches rows
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.backfills import BackfillControl, BackfillDefinition, Batch, Started
from engine.backfills.declare import is_async_handle
from engine.backfills.passes import _count, _plan, stalled_error
from engine.errors import JobsError
from engine.retry import error_text
from engine.testing.factory import WORKER, Factory
from engine.types import Claim

BATCH_TOOK = 0.05  # seconds a batch's read, handle and commit take on the clock; the rest is the rate's wait


@dataclass
class PassPlayer:
    f: Factory
    d: BackfillDefinition
    started: Started
    claim: Claim
    conn: Any
    worker: str
    swept: int = 0
    batches_done: int = 0
    cursor: Any = None
    exhausted: bool = False
    planned: int | None = None
    _seq: int = field(default=2, init=False)  # the plan step is 1

    @property
    def write(self) -> bool:
        return not self.started.dry_run

    @classmethod
    async def start(
        cls,
        f: Factory,
        control: BackfillControl,
        name: str,
        *,
        write: bool = False,
        force: bool = False,
        worker: str = WORKER,
    ) -> PassPlayer:
        """Start the pass through the control's gates (its ledger row and its job), claim it as
        ``worker``, count what it will sweep and begin its ledger row."""
        started = await control.start(name, write=write, force=force)
        d = control.catalog.get(name)
        claim = await f.claim(started.job_id, worker)
        begun = f.now  # as a pass's run begins: before its count
        conn = d.owner.open_connection()
        planned = _plan(d, conn)
        await f.step(claim, "plan", 1, result=planned, took=BATCH_TOOK)
        await f.driver.backfill_begin(run_id=started.run_id, planned=planned, now=begun)
        return cls(f, d, started, claim, conn, worker, planned=planned)

    async def batches(self, n: int | None = None, *, every: float | None = None) -> bool:
        """Play up to ``n`` batches (None: until the source runs out), ``every`` seconds apart
        (default: 1/rate); True when the source has run out."""
        interval = every if every is not None else (1.0 / self.d.rate if self.d.rate else BATCH_TOOK)
        played = 0
        while not self.exhausted and (n is None or played < n):
            number = self.batches_done + 1
            rows, cursor = self.d.source.read(self.conn, after=self.cursor, size=self.d.batch_size)
            if not rows:
                await self._step(f"batch-{number}", {"rows": 0, "cursor": self.cursor})
                self.exhausted = True
                break
            if self.write:
                done = self.d.handle(Batch(list(rows), self.conn, number, cursor))
                if is_async_handle(self.d.handle):
                    await done
            held = await self.f.driver.backfill_progress(
                run_id=self.started.run_id, claim=self.claim, swept=self.swept + len(rows), batches=number
            )
            assert held, f"pass {self.started.run_id} no longer holds its job"
            self._end_tx(commit=self.write)
            await self._step(f"batch-{number}", {"rows": len(rows), "cursor": cursor})
            self.swept, self.batches_done, self.cursor = self.swept + len(rows), number, cursor
            played += 1
            self.f.advance(max(interval - BATCH_TOOK, 0.0))
        return self.exhausted

    async def finish(self) -> str:
        """Sweep what is left, then end as the pass does: completed, or stalled (terminal) when
        count() still matches rows the source no longer yields. Answers the ledger's outcome."""
        await self.batches()
        remaining = _count(self.d, self.conn)
        if (self.write and remaining > 0) or (not self.write and self.swept < remaining):
            err = stalled_error(self.d, swept=self.swept, remaining=remaining)
            await self._ledger("stalled", error_text(err))
            await self._nack(err)
            return "stalled"
        await self._ledger("completed", None)
        result = {"run": self.started.run_id, "swept": self.swept, "batches": self.batches_done}
        await self.f.complete(self.claim, result={**result, "remaining": remaining, "write": self.write})
        self._close()
        return "completed"

    async def fail(self, error: JobsError, *, attempts: int = 1) -> None:
        """The next batch's handle raises ``error``, on ``attempts`` attempts in a row (each
        re-delivery replays the stored batches and fails at the same one), each settled as the
        worker settles a failure: retried under the pass's policy, dead when it runs out. Between
        attempts the clock moves on by the backoff: more than one attempt needs a FakeClock."""
        for i in range(attempts):
            if i:
                self.claim = await self.f.claim(self.started.job_id, self.worker)
                await self.f.driver.backfill_begin(run_id=self.started.run_id, planned=self.planned, now=self.f.now)
            attempt = (await self.f.get(self.started.job_id)).attempt
            await self.f.step(
                self.claim,
                f"batch-{self.batches_done + 1}",
                self._seq,
                status="failed",
                took=BATCH_TOOK,
                error=error_text(error),
                attempt=attempt,
            )
            self._end_tx(commit=False)
            await self._ledger("failed", error_text(error))
            if await self._nack(error):
                break

    async def renew(self) -> None:
        """Renew the pass's lease, as its worker does while it runs."""
        await self.f.renew([self.claim], worker=self.worker)

    async def release(self) -> None:
        """Hand the pass back as a draining worker does (I14): ready again, its ledger row still
        running; the next worker replays its stored batches and reads on from its cursor."""
        row = await self.f.get(self.started.job_id)
        await self.f.nack(self.claim, "release", run_at=row.run_at or self.f.now)
        self._close()

    # --- what run_pass does around a batch ---------------------------------------------------------

    async def _step(self, name: str, result: Any) -> None:
        await self.f.step(self.claim, name, self._seq, result=result, took=BATCH_TOOK)
        self._seq += 1

    def _end_tx(self, *, commit: bool) -> None:
        done = getattr(self.conn, "commit" if commit else "rollback", None)
        if callable(done):
            done()

    async def _ledger(self, outcome: Any, error: str | None) -> None:
        await self.f.driver.backfill_finish(
            run_id=self.started.run_id,
            outcome=outcome,
            swept=self.swept or None,
            batches=self.batches_done or None,
            error=error,
            now=self.f.now,
        )

    async def _nack(self, exc: BaseException) -> bool:
        """Settle the failed run as the worker does; True when the pass is dead."""
        decision = await self.f.fail(self.claim, exc, self.d.retry)
        if decision.outcome == "dead":
            self._close()
            return True
        self.f.advance(decision.delay)
        return False

    def _close(self) -> None:
        close = getattr(self.conn, "close", None)
        if callable(close):
            close()
