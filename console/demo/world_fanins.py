"""The world's fan-ins (world.py): a month's close fans out one statement per account and waits
for them. This month's is waiting as NOW comes; last month's died of a statement the renderer
refused, so the console has a dead fan-in to retry with its children."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from console.demo import jobs as app
from engine.testing import Factory, IdFactory

if TYPE_CHECKING:
    from engine import Enqueue, JobDefinition


class FanIns:
    """Mixed into the world (world._World), whose ``f`` (its factory), ``at`` (its clock),
    ``now_at`` (its end), ``seed``, ``spec`` and ``one`` these use; ``reports_worker`` runs the
    reports queue."""

    f: Factory
    now_at: datetime
    seed: int
    reports_worker: str

    if TYPE_CHECKING:  # the world's own

        def at(self, moment: datetime) -> None: ...

        def spec(self, h: JobDefinition, inp: dict[str, Any], tenant: str | None = None, **kw: Any) -> Enqueue: ...

        async def one(self, h: JobDefinition, inp: dict[str, Any], tenant: str | None = None, **kw: Any) -> str: ...

    async def fan_in(self) -> None:
        """A month's close that fanned out four statements 90 s before NOW and waits for them: two
        rendered, one rendering on app2, one still to run. Played last, over the rest of the hour,
        so the world's other rows keep their ids and times; the close's priority puts its looks
        ahead of the parked report in the reports queue."""
        back = self.f.now
        self.at(self.now_at - timedelta(seconds=90))
        accounts = [101, 102, 103, 104]
        close = await self.one(app.close_month, {"month": "2026-11", "accounts": accounts}, "initech")
        claim = await self.f.claim(close, self.reports_worker)
        specs = [self.spec(app.render_statement, {"month": "2026-11", "account": a}, "initech") for a in accounts]
        kids = await self.f.enqueue(*specs)
        await self.f.step(claim, "fan-out", 1, kind="enqueue", took=0.1, result=kids)
        started = self.f.now
        wait = {
            "kind": "jobs",
            "step": "statements",
            "jobs": kids,
            "timeout_at": (started + timedelta(hours=1)).isoformat(),
        }  # the wait the engine writes (engine/runtime/steps.py)
        await self.f.step(claim, "statements", 2, kind="jobs", status="waiting", took=0.0, wait=wait)
        poll = app.close_month.event_poll
        await self.f.fan_in_suspend(claim, wait, started=started, event_poll=poll)
        rendered = await self.f.claim_due("reports", self.reports_worker, limit=3)
        assert [c.job_id for c in rendered] == kids[:3]
        self.f.advance(2.5)
        for c in rendered[:2]:
            await self.f.complete(c, result={"pdf": f"statement-2026-11-{accounts[kids.index(c.job_id)]}.pdf"})
        self.at(self.now_at - timedelta(seconds=10))
        await self.f.renew(rendered[2:], worker=self.reports_worker)  # still rendering: app2 renews it
        # Its last look, 3 s before NOW, found one running and one ready.
        self.at(self.now_at - timedelta(seconds=3))
        (look,) = await self.f.claim_due("reports", self.reports_worker, limit=1)
        assert look.job_id == close
        await self.f.fan_in_suspend(look, wait, started=started, event_poll=poll)
        self.at(back)

    async def failed_close(self) -> None:
        """Last month's close, on ids of its own (played last, so every other id stays as it was):
        it fanned out three statements 50 minutes before NOW; the renderer refused the third on
        each of its attempts, so the close's wait answered one dead and the close died with
        X_CLOSE_PARTIAL, which a retry of the close alone would answer again."""
        back = self.f.now
        f = Factory(self.f.driver, IdFactory(self.f.clock, seed=self.seed + 2), self.f.clock)
        self.at(self.now_at - timedelta(minutes=50))
        month, accounts = "2026-10", [201, 202, 203]
        close = (await f.enqueue(self.spec(app.close_month, {"month": month, "accounts": accounts}, "initech")))[0]
        claim = await f.claim(close, self.reports_worker)
        inputs = [{"month": month, "account": a} for a in accounts]
        kids = await f.enqueue(*(self.spec(app.render_statement, inp, "initech") for inp in inputs))
        await f.step(claim, "fan-out", 1, kind="enqueue", took=0.1, result=kids)
        started = f.now
        wait = {
            "kind": "jobs",
            "step": "statements",
            "jobs": kids,
            "timeout_at": (started + timedelta(hours=1)).isoformat(),
        }
        await f.step(claim, "statements", 2, kind="jobs", status="waiting", took=0.0, wait=wait)
        await f.fan_in_suspend(claim, wait, started=started, event_poll=app.close_month.event_poll)
        # A worker's rounds: what falls due in the queue is claimed, the close's looks ahead (its
        # priority); a look that finds a statement live suspends the close again.
        by_id = dict(zip(kids, inputs, strict=True))
        while True:
            claims = await f.claim_due("reports", self.reports_worker)
            assert {c.job_id for c in claims} <= {close, *kids}, "the world's other reports are not due yet"
            f.advance(3.0)
            for c in claims:
                if c.job_id != close:
                    inp = by_id[c.job_id]
                    if inp["account"] != accounts[-1]:
                        await f.complete(c, result=app._render(inp))
                    else:
                        await f.fail(c, app.failure("X_RENDERER_DOWN", inp), app.render_statement.retry)
                    continue
                rows = await f.driver.job_get_many(job_ids=kids)
                if any(r.state.value not in ("completed", "dead") for r in rows):
                    await f.fan_in_suspend(c, wait, started=started, event_poll=app.close_month.event_poll)
                    continue
                by_row = {r.id: r for r in rows}
                outcomes = [
                    {"id": r.id, "name": r.name, "state": r.state.value, "result": r.result,
                     "error_code": r.error_code, "error": None if r.state.value == "completed" else r.last_error,
                     "stop_reason": r.stop_reason}
                    for r in (by_row[k] for k in kids)
                ]  # fmt: skip  # what the wait answers (the engine's fanin.outcome)
                await f.step(c, "statements", 2, kind="jobs", took=0.0, result=outcomes, wait=wait)
                missing = app.statements_missing(month, kids, outcomes)
                assert missing is not None
                await f.fail(c, missing, app.close_month.retry)
                self.at(back)
                return
            if not claims:  # the next is due later: a backoff, or the close's next look
                f.advance(1.0)
