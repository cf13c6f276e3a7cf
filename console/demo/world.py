"""The demo's world: one hour of a real application's life, played onto any engine.

One definition serves both pictures of the demo: ``seeded_engine()`` plays it onto the memory
driver on a fake clock stopped at NOW (the snapshot tests and screenshots/ are made from it, so
they read the same ages every time), and ``jobs-console demo`` plays it onto its throwaway
PostgreSQL with the hour ending at the real now, before its workers take over. The jobs are the
demo application's own declarations (jobs.py), so every seeded job is one its handlers can run.

Everything goes through the engine's testing factory (engine.testing.Factory: enqueue, claim,
step, nack, heartbeat, slot, pause), never by writing rows, so the state is one the engine can
really be in. The hour holds: six queues, jobs in every state, dead letters of both stop reasons
with error codes and tenants, a retrying job, jobs parked behind a full concurrency limit and a
rate limit, a sleep and an event wait, a paused queue, three workers (one stale), the cron tasks
the second worker schedules as the leader (one runs every minute), attempts and step traces,
inputs that are huge, hostile (terminal escapes, Rich markup) or binary-looking, the shop's
checkouts staged through the transactional outbox (some rolled back), whose relays have been
failing on one receipt for the last three minutes, the ledger of the app's two backfills with
a pass running (world_backfills.py), and two months' closes that fanned out their statements: this
month's waiting for them, last month's dead of one that never rendered (world_fanins.py).
"""

from __future__ import annotations

import asyncio
import random
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

from console.demo import jobs as app
from console.demo.accounts import MemoryAccounts, declare
from console.demo.outbox import play_outbox
from console.demo.world_backfills import ENVIRONMENT, BackfillStory
from console.demo.world_fanins import FanIns
from engine import Engine, Enqueue, FakeClock, JobDefinition, connect
from engine.testing import Factory, IdFactory

START = datetime(2026, 1, 1, 11, 0, tzinfo=UTC)
NOW = START + timedelta(hours=1)
TENANTS = ("acme", "globex", "initech", None)
APP1, APP2, BATCH = "w-app1", "w-app2", "w-batch"
WORKERS = (  # id, host, pid, queues, concurrency
    (APP1, "app1", 4242, ("emails", "billing", "integrations"), 8),
    (APP2, "app2", 5151, ("reports", "accounts", "webhooks"), 4),
    (BATCH, "batch", 777, ("reports",), 2),  # stops sending heartbeats three minutes before NOW: stale
)
WORKER_OF = {q: wid for wid, _, _, queues, _ in WORKERS[:2] for q in queues}
PAUSED = ("webhooks", "alice", "INC-2041: receiver returns 410")  # queue, by, note


SMTP_TRACEBACK = "\n".join(  # what the worker stores for a failed attempt (WorkerConfig.traceback_limit)
    (
        'Traceback (most recent call last):\n  File "shop/jobs.py", line 41, in send_receipt',
        '    await ctx.step.run("send", lambda: mail.send(receipt))\n'
        '  File "engine/runtime/steps.py", line 212, in run',
        '    result = await self._call(fn)\n  File "shop/mail.py", line 18, in send',
        '    reply = conn.sendmail(self.sender, [to], body)\n  File "smtplib.py", line 887, in sendmail',
        '    raise SMTPTimeout(f"{self.host}:{self.port} did not answer")',
        "shop.mail.SMTPTimeout: X_SMTP_TIMEOUT: smtp.example.com:587 did not answer",
    )
)


class _World(FanIns):
    reports_worker = APP2

    def __init__(self, f: Factory, start: datetime, seed: int, cron: bool, story: BackfillStory) -> None:
        self.f, self.start, self.now_at = f, start, start + timedelta(hours=1)
        self.seed = seed
        self.story = story  # the app's backfills: their passes in the hour (world_backfills.py)
        self.rng = random.Random(seed)
        self.n = 0
        self.contact = ""  # the umbrella contact the rate limit sheds
        # Ticked once a minute (cron_tick), at the second the hour ends at, where a real one ticks
        # every few seconds: an occurrence may be up to a minute old at its tick, and is on time
        # (with the default grace, an hour ending past :35 skipped all sixty minutely ones).
        self.scheduler = f.scheduler(
            app.DEMO_TASKS if cron else (),
            holder=APP2,
            host="app2",
            pid=5151,
            grace=90.0,
        )
        self.cron = cron

    def at(self, moment: datetime) -> None:
        assert isinstance(self.f.clock, FakeClock)
        self.f.clock.set(moment)

    def spec(self, h: JobDefinition, inp: dict[str, Any], tenant: str | None = None, **kw: Any) -> Enqueue:
        self.n += 1
        return Enqueue(h, inp, tenant=tenant, **kw)

    async def one(self, h: JobDefinition, inp: dict[str, Any], tenant: str | None = None, **kw: Any) -> str:
        (jid,) = await self.f.enqueue(self.spec(h, inp, tenant, **kw))
        return jid

    async def heartbeats(self, *, stale_too: bool) -> None:
        for wid, *_ in WORKERS:
            if stale_too or wid != BATCH:
                await self.f.heartbeat(wid)

    # --- the hour -------------------------------------------------------------------------------

    def _input(self, h: JobDefinition) -> dict[str, Any]:
        n = 100 + self.n
        if h is app.send_email:
            return {"user_id": n, "to": f"user{self.rng.randint(1, 99)}@example.com"}
        if h is app.charge_card:
            return {"invoice_id": n, "amount_cents": self.rng.randrange(500, 99_000)}
        if h is app.generate_report:
            return {"report": f"daily-{n}", "seconds": 2}
        if h is app.sync_crm_contact:
            return {"contact": n}
        return {"url": f"https://hooks.example.com/{n % 7}", "event": "invoice.paid", "n": n}

    async def hour_of_traffic(self) -> None:
        for wid, host, pid, queues, conc in WORKERS:
            await self.f.worker(wid, host=host, pid=pid, queues=queues, concurrency=conc)
        rates = {app.send_email: 4, app.charge_card: 2, app.generate_report: 1, app.deliver_webhook: 2}
        rates[app.sync_crm_contact] = 1
        for minute in range(60):
            self.at(self.start + timedelta(minutes=minute))
            await self.heartbeats(stale_too=minute < 57)
            await self.story.minute(minute)
            await self.cron_tick()
            for h, rate in rates.items():
                wave = 1 + (minute // 10) % 3  # traffic ebbs and flows, so the sparkline has a shape
                count = self.rng.randint(0, rate * wave)
                if not count:
                    continue
                tenants = [self.rng.choice(TENANTS) for _ in range(count)]
                await self.f.enqueue(*(self.spec(h, self._input(h), t) for t in tenants))
                self.f.advance(2)
                got = await self.f.claim_due(h.queue, WORKER_OF[h.queue], limit=count)
                self.f.advance(self.rng.uniform(0.5, 8))
                await self.f.complete(*got)
            if minute in (5, 17, 31, 44, 52):
                await self.dead_letter(app.charge_card, "X_CARD_DECLINED", tenant=self.rng.choice(TENANTS[:3]))
            if minute in (12, 29, 48):
                await self.dead_letter(app.send_email, "X_SMTP_TIMEOUT", tenant="acme")
            if minute in (22, 50):
                await self.dead_letter(app.deliver_webhook, "X_HTTP_410", tenant="globex")
        self.at(self.now_at - timedelta(seconds=90))
        await self.heartbeats(stale_too=False)

    async def cron_tick(self) -> None:
        """One tick of the scheduler the second app worker runs; the occurrence it enqueues (the
        minutely report) is run by that worker at once."""
        if not self.cron:
            return
        await self.scheduler.run_once()
        got = await self.f.claim_due("reports", WORKER_OF["reports"], limit=10)
        self.f.advance(0.5)
        await self.f.complete(*got)

    async def dead_letter(self, h: JobDefinition, code: str, *, tenant: str | None) -> str:
        """A job failing as its handler fails on this input, settled as the worker settles it:
        terminal at once, or on every attempt (the error the app raises, its fix among it)."""
        n = 1000 + self.n
        inp = {
            "X_CARD_DECLINED": {"invoice_id": n, "amount_cents": 4250, "card": "declined"},
            "X_SMTP_TIMEOUT": {"user_id": n, "to": f"user{n}@slow.example"},
            "X_HTTP_410": {"url": "https://hooks.example.com/gone", "event": "invoice.paid", "n": n},
        }[code]
        jid = await self.one(h, inp, tenant)
        while True:
            claim = await self.f.claim(jid, WORKER_OF[h.queue])
            self.f.advance(1.5)
            decision = await self.f.fail(claim, app.failure(code, inp), h.retry)
            if decision.outcome == "dead":
                return jid
            self.f.advance(decision.delay)

    # --- now ------------------------------------------------------------------------------------

    async def dead_with_a_step_trace(self) -> None:
        """A receipt that rendered, then timed out sending on every attempt."""
        inp = {"order": "ord-981", "email": "pat@slow.example"}
        dead = await self.one(app.send_receipt, inp, "acme")
        exc = app.failure("X_SMTP_TIMEOUT", {"to": inp["email"]})
        for attempt in range(1, app.send_receipt.retry.attempts + 1):
            claim = await self.f.claim(dead, APP1)
            if attempt == 1:
                await self.f.step(claim, "render", 1, took=0.4, result={"html_bytes": 18234})
            error = f"{exc.code}: {exc.cause}"
            await self.f.step(claim, "send", 2, status="failed", took=3.0, error=error, attempt=attempt)
            decision = await self.f.fail(claim, exc, app.send_receipt.retry, traceback=SMTP_TRACEBACK)
            self.f.advance(decision.delay)

    async def limits(self) -> list[Any]:
        """A contact parked by its tenant's empty token bucket; two reports hold both slots of
        generate_report's concurrency limit, so a third is parked (no attempt burned, no error)."""
        self.at(self.now_at - timedelta(seconds=60))
        self.contact = await self.one(app.sync_crm_contact, {"contact": 9001, "crm": "ok"}, "umbrella")
        running = []
        key = f"concurrency:{app.generate_report.name}"
        for i in range(2):
            jid = await self.one(app.generate_report, {"report": f"monthly-{i + 1}", "rows": 120_000}, "initech")
            claim = await self.f.claim(jid, APP2)
            await self.f.hold_slot(key, limit=app.generate_report.concurrency or 1, job_id=jid, worker=APP2)
            await self.f.step(claim, "query", 1, took=4.0, result={"rows": 120_000})
            running.append(claim)
        parked = await self.one(app.generate_report, {"report": "quarterly", "rows": 2_000_000}, "acme")
        claim = await self.f.claim(parked, APP2)
        wait = {"kind": "limit", "limit": "concurrency", "key": key}
        await self.f.nack(claim, "park", run_at=self.f.now + timedelta(seconds=20), wait=wait)
        return running

    async def rate_limited(self) -> None:
        """The umbrella tenant's bucket was just emptied by two syncs, so its waiting contact is shed."""
        rate = app.sync_crm_contact.rate_limit
        assert rate is not None
        bucket = f"rate:{app.sync_crm_contact.name}:umbrella"
        self.at(self.now_at - timedelta(seconds=2))
        for _ in range(rate.limit):
            await self.f.take_token(bucket, limit=rate.limit, per=rate.per)
        claim = await self.f.claim(self.contact, APP1)
        wait = {"kind": "limit", "limit": "rate", "key": bucket}
        await self.f.nack(claim, "park", run_at=self.f.now + timedelta(seconds=rate.per / rate.limit), wait=wait)
        self.at(self.now_at)

    async def waits(self) -> None:
        """A workspace sleeping for three days, and one waiting for its approval event."""
        sleeper = await self.one(app.provision_workspace, {"user_id": 7, "workspace": "ws-7", "plan": "team"}, "globex")
        claim = await self.f.claim(sleeper, APP2)
        await self.f.step(claim, "create", 1, took=1.2, result={"id": "ws-7", "region": "eu-west-1"})
        until = self.f.now + timedelta(days=3)
        sleep = {"until": until.isoformat()}
        await self.f.step(claim, "settle", 2, kind="sleep", status="waiting", took=0.0, wait=sleep)
        wait: dict[str, Any] = {"kind": "sleep", "step": "settle", "until": until.isoformat()}
        await self.f.nack(claim, "suspend", run_at=until, wait=wait)
        inp = {"user_id": 8, "workspace": "ws-8", "plan": "enterprise", "settle": 5}
        waiter = await self.one(app.provision_workspace, inp, "acme")
        claim = await self.f.claim(waiter, APP2)
        await self.f.step(claim, "create", 1, took=0.9, result={"id": "ws-8", "region": "eu-west-1"})
        slept = {"until": (self.f.now + timedelta(seconds=5)).isoformat()}
        await self.f.step(claim, "settle", 2, kind="sleep", took=5.0, wait=slept)
        timeout = self.f.now + timedelta(hours=24)
        wait = {
            "kind": "event",
            "step": "approved",
            "event": app.APPROVAL_EVENT,
            "match": {"workspace": "ws-8"},
            "timeout_at": timeout.isoformat(),
        }  # the wait the engine writes (engine/runtime/steps.py)
        await self.f.step(claim, "approved", 3, kind="event", status="waiting", took=0.0, wait=wait)
        # As the engine suspends it: until its next poll for the event, not until the timeout (its
        # last poll was 10 s before NOW).
        poll = self.now_at - timedelta(seconds=10) + timedelta(seconds=app.provision_workspace.event_poll)
        await self.f.nack(claim, "suspend", run_at=min(poll, timeout), wait=wait)

    async def live_states(self) -> None:
        await self.dead_with_a_step_trace()
        running = await self.limits()
        await self.waits()
        # A retrying email: failed once, delayed until its backoff ends.
        retrying = await self.one(app.send_email, {"user_id": 41, "to": "lee@example.com"}, "globex")
        claim = await self.f.claim(retrying, APP1)
        error = "X_SMTP_TIMEOUT: smtp.example.com:587 did not answer in 30s"
        run_at = self.f.now + timedelta(minutes=4)
        await self.f.nack(claim, "retry", run_at=run_at, error=error, error_code="X_SMTP_TIMEOUT")
        # Running emails and a ledger sync on app1.
        for uid, to in ((42, "kim@example.com"), (43, "ola@example.com")):
            jid = await self.one(app.send_email, {"user_id": uid, "to": to, "template": "digest"}, "acme")
            await self.f.claim(jid, APP1)
        ledger = await self.one(app.sync_ledger, {"account": 31337, "since": "2025-12-31"}, "initech")
        await self.f.claim(ledger, APP1)
        self.at(self.now_at)
        # app2 renews the reports it runs, as a live worker does: their job and slot leases end
        # after NOW, so the parked report's "why" names live holders and when their leases end.
        self.at(self.now_at - timedelta(seconds=10))
        await self.f.renew(running, worker=APP2)
        await self.rate_limited()
        await self.waiting_work()
        await self.heartbeats(stale_too=False)
        await self.story.now()
        for wid, in_use in ((APP1, 3), (APP2, 4)):  # app2: two reports, a statement and a backfill pass
            await self.f.heartbeat(wid, in_use=in_use)

    async def waiting_work(self) -> None:
        """An old billing backlog (its oldest waiting age crosses the alert), a delayed batch, hostile
        and huge inputs, a paused queue holding webhooks, and a cancelled job for the history."""
        now = self.now_at
        backlog = [
            self.spec(
                app.charge_card,
                {"invoice_id": 40 + i, "amount_cents": 1999 + i * 100},
                TENANTS[i % 3],
                run_at=now - timedelta(minutes=7, seconds=-20 * i),
            )
            for i in range(4)
        ]
        await self.f.enqueue(*backlog)
        later = now + timedelta(minutes=30)
        newsletter = [
            self.spec(
                app.send_email,
                {"user_id": 60 + i, "to": f"batch{i}@example.com", "template": "newsletter"},
                "globex",
                run_at=later,
            )
            for i in range(6)
        ]
        await self.f.enqueue(*newsletter)
        hostile = {
            "user_id": 66,
            "to": "eve@example.com",
            "subject": "\x1b[2J\x1b[31mpwned\x07 [bold red]markup[/]",
            "body": "x" * 5000,
            "blob": "".join(chr(i % 32 or 0x7F) for i in range(200)),
        }
        await self.one(app.send_email, hostile, "acme", run_at=now - timedelta(seconds=40))
        items = {"user_id": 67, "to": "sam@example.com", "items": [{"sku": f"sku-{i}", "qty": i} for i in range(40)]}
        await self.one(app.send_email, items, "initech", run_at=now - timedelta(seconds=30))
        hooks = [
            self.spec(
                app.deliver_webhook,
                {"url": f"https://hooks.example.com/{i}", "event": "invoice.paid"},
                "globex",
                run_at=now - timedelta(minutes=3),
            )
            for i in range(3)
        ]
        await self.f.enqueue(*hooks)
        queue, actor, note = PAUSED
        self.at(now - timedelta(minutes=3))
        await self.f.pause(queue, actor=actor, note=note)
        self.at(now)
        gone = await self.one(
            app.sync_ledger, {"account": 7, "since": "2025-12-01"}, "acme", run_at=now + timedelta(hours=2)
        )
        await self.f.cancel(gone, actor="bob", note="duplicate of a manual sync")
        if self.cron:
            await self.scheduler.run_once()  # the leader's latest tick: its lease runs on past the end

    async def checkouts(self) -> None:
        """The shop's checkouts of the hour, through the transactional outbox (outbox.py): played
        last, on ids of their own, so every id the rest of the world mints stays as it was."""
        f = Factory(self.f.driver, IdFactory(self.f.clock, seed=self.seed + 1), self.f.clock)
        await play_outbox(f, self.now_at, worker=APP1, seed=self.seed)


async def play_world(
    engine: Engine, *, ending: datetime = NOW, seed: int = 7, cron: bool = True, backfills: Any = None
) -> None:
    """Play the world's hour onto ``engine`` (whose clock must be a FakeClock), ending at ``ending``;
    leaves the clock there. ``cron=False``: no scheduler ticks (for a test that plays its own).
    ``backfills``: the app's (accounts.py) over its store, whose passes the hour plays too."""
    assert isinstance(engine.clock, FakeClock), "the world is played on a FakeClock"
    story = BackfillStory(engine, backfills, worker=APP2, ending=ending)
    w = _World(Factory.of(engine), ending - timedelta(hours=1), seed, cron, story)
    await w.f.open()
    w.at(w.start)
    await w.hour_of_traffic()
    await w.live_states()
    await w.checkouts()
    await w.fan_in()
    await w.failed_close()


def _run(coro: Any) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(1) as pool:  # called from a running loop (an async test): play on another
        return pool.submit(asyncio.run, coro).result()


def seeded_engine(*, seed: int = 7, empty: bool = False, cron: bool = True, backfills: Any = None) -> Engine:
    """A memory engine on a FakeClock stopped at NOW, in production, holding the world's hour (or
    nothing). ``backfills``: the app's catalog the hour plays (default: one over its own
    in-process accounts table)."""
    clock = FakeClock(START)
    engine = connect("memory://", clock=clock, ids=IdFactory(clock, seed=seed), environment=ENVIRONMENT)
    if not empty:
        _run(play_world(engine, seed=seed, cron=cron, backfills=backfills or memory_backfills()))
    clock.set(NOW)
    return engine


def memory_backfills() -> Any:
    """The app's two backfills over a fresh in-process accounts table (accounts.py)."""
    return declare(MemoryAccounts())


def seeded_source(
    *,
    seed: int = 7,
    read_only: bool = False,
    empty: bool = False,
    cron: bool = True,
    actor: str = "console:test",
    backfills: Any = True,
) -> Any:
    """The console's Source on the seeded world. ``backfills``: True declares the app's two (the
    catalog the hour played), None declares none, or a catalog of the caller's."""
    from console.source import Source

    catalog = memory_backfills() if backfills is True else backfills
    return Source(
        seeded_engine(seed=seed, empty=empty, cron=cron, backfills=catalog),
        read_only=read_only,
        actor=actor,
        database="memory (seeded demo)",
        driver="memory",
        backfills=catalog,
    )
