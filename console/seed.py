"""A deterministic, realistic engine state for snapshots, screenshots and the demo's first frame.

Stable signatures (the demo engineer and screenshots reuse them)::

    seeded_engine(*, seed=7, empty=False) -> Engine        # memory driver, FakeClock at NOW
    seeded_source(*, seed=7, read_only=False, empty=False, actor="console:test") -> Source
    await seed_state(driver, clock, ids)                    # onto any driver, through its own operations

Everything goes through the Driver's operations (enqueue, claim, ack, nack, steps, slots, workers,
pause), never by writing rows directly, so the state is one the engine can really be in. The clock
starts at 11:00 UTC, an hour of traffic is played (so throughput and first/last seen are real) and
it stops at NOW = 12:00 UTC, where it stays: the snapshots read the same ages every time.

The hour holds: five queues (emails, billing, reports, accounts, webhooks), jobs in every state,
dead letters of both stop reasons with error codes and tenants, a retrying (delayed) job, a parked
job behind a full concurrency limit, suspended sleep and event waits, a paused queue, three
workers (one stale), attempts and step traces, and inputs that are huge, hostile (terminal escapes,
Rich markup) or binary-looking.
"""

from __future__ import annotations

import asyncio
import random
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from engine.api import Engine
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.jobs import DEFAULT_EVENT_POLL
from engine.types import Ack, Claim, ClaimedJob, Nack, NewJob, StoredStep

T = TypeVar("T")
START = datetime(2026, 1, 1, 11, 0, tzinfo=UTC)
NOW = START + timedelta(hours=1)
TENANTS = ("acme", "globex", "initech", None)
LEASE = 30.0

# name, queue, max attempts
JOBS = {
    "send_email": ("emails", 5),
    "send_receipt": ("emails", 5),
    "charge_card": ("billing", 3),
    "sync_ledger": ("billing", 5),
    "generate_report": ("reports", 3),
    "provision_workspace": ("accounts", 5),
    "deliver_webhook": ("webhooks", 8),
}
WORKERS = (  # id, host, pid, queues, concurrency
    ("w-app1-4242", "app1", 4242, ("emails", "billing"), 8),
    ("w-app2-5151", "app2", 5151, ("reports", "accounts", "webhooks"), 4),
    ("w-batch-777", "batch", 777, ("reports",), 2),  # stops sending heartbeats at 11:57: stale
)
REPORT_SLOTS = 2
SMTP_TRACEBACK = "\n".join(  # what the worker stores for a failed attempt (WorkerConfig.traceback_limit)
    (
        'Traceback (most recent call last):\n  File "shop/jobs.py", line 41, in send_receipt',
        '    await ctx.step.run("send", lambda: mail.send(receipt))\n  File "engine/runtime/steps.py", line 212, in run',
        '    result = await self._call(fn)\n  File "shop/mail.py", line 18, in send',
        '    reply = conn.sendmail(self.sender, [to], body)\n  File "smtplib.py", line 887, in sendmail',
        '    raise SMTPTimeout(f"{self.host}:{self.port} did not answer")',
        "shop.mail.SMTPTimeout: X_SMTP_TIMEOUT: smtp.example.com:587 did not answer",
    )
)


class _Seeder:
    def __init__(self, driver: Driver, clock: FakeClock, ids: IdFactory, seed: int) -> None:
        self.d, self.clock, self.ids = driver, clock, ids
        self.rng = random.Random(seed)
        self.n = 0

    @property
    def now(self) -> datetime:
        return self.clock.now()

    def new(
        self,
        name: str,
        inp: Any,
        *,
        tenant: str | None = None,
        key: str | None = None,
        run_at: datetime | None = None,
        priority: int = 0,
    ) -> NewJob:
        queue, attempts = JOBS[name]
        self.n += 1
        return NewJob(
            id=self.ids.new(),
            name=name,
            queue=queue,
            idempotency_key=key or f"{name}:{self.n}",
            input=inp,
            max_attempts=attempts,
            tenant=tenant,
            run_at=run_at,
            priority=priority,
        )

    async def enqueue(self, *jobs: NewJob) -> list[str]:
        res = await self.d.job_enqueue(jobs=list(jobs), now=self.now)
        return [r.id for r in res]

    async def claim(self, queue: str, worker: str, limit: int = 1) -> list[ClaimedJob]:
        batch = await self.d.worker_claim(queues=[queue], limit=limit, worker=worker, now=self.now, lease_seconds=LEASE)
        return batch.jobs

    async def claim_one(self, job_id: str, worker: str) -> Claim:
        """Claim exactly this job: it is the only due row of its queue when the seeder asks."""
        row = await self.d.job_get(job_id=job_id)
        assert row is not None
        got = await self.claim(row.queue, worker, limit=1000)
        mine = None
        for cj in got:
            if cj.row.id == job_id:
                mine = cj
            else:
                await self.d.job_nack(nack=Nack(cj.claim, "release", run_at=cj.row.run_at), now=self.now)
        assert mine is not None, f"seed could not claim {job_id}"
        return mine.claim

    async def step(
        self,
        claim: Claim,
        name: str,
        seq: int,
        *,
        kind: str = "run",
        status: str = "completed",
        took: float = 0.2,
        result: Any = None,
        error: str | None = None,
        wait: dict[str, Any] | None = None,
        attempt: int = 1,
    ) -> None:
        started = self.now
        self.clock.advance(took)
        await self.d.step_save(
            claim=claim,
            step=StoredStep(  # type: ignore[attr-defined]
                job_id=claim.job_id,
                name=name,
                seq=seq,
                kind=kind,
                status=status,
                attempt=attempt,  # type: ignore[arg-type]
                run=claim.run,
                started_at=started,
                finished_at=None if status == "waiting" else self.now,
                result=result,
                error=error,
                wait=wait,
            ),
        )

    async def heartbeats(self, *, skip_stale: bool) -> None:
        for wid, *_ in WORKERS:
            if skip_stale and wid == "w-batch-777":
                continue
            await self.d.worker_heartbeat(id=wid, in_use=0, stopping=False, now=self.now)  # type: ignore[attr-defined]

    # --- the hour ---------------------------------------------------------------------------------

    async def hour_of_traffic(self) -> None:
        for wid, host, pid, queues, conc in WORKERS:
            await self.d.worker_register(id=wid, host=host, pid=pid, queues=queues, concurrency=conc, now=self.now)  # type: ignore[attr-defined]
        rates = {"send_email": 4, "charge_card": 2, "generate_report": 1, "deliver_webhook": 2}
        worker_of = {
            "emails": WORKERS[0][0],
            "billing": WORKERS[0][0],
            "reports": WORKERS[1][0],
            "webhooks": WORKERS[1][0],
        }
        for minute in range(60):
            self.clock.set(START + timedelta(minutes=minute))
            await self.heartbeats(skip_stale=minute >= 57)
            for name, rate in rates.items():
                wave = 1 + (minute // 10) % 3  # traffic ebbs and flows, so the sparkline has a shape
                count = self.rng.randint(0, rate * wave)
                if not count:
                    continue
                tenants = [self.rng.choice(TENANTS) for _ in range(count)]
                await self.enqueue(
                    *(
                        self.new(name, {"n": self.n + 1, "to": f"user{self.rng.randint(1, 99)}@example.com"}, tenant=t)
                        for t in tenants
                    )
                )
                self.clock.advance(2)
                got = await self.claim(JOBS[name][0], worker_of[JOBS[name][0]], limit=count)
                self.clock.advance(self.rng.uniform(0.5, 8))
                await self.d.job_ack_many(acks=[Ack(cj.claim, {"ok": True}) for cj in got], now=self.now)
            if minute in (5, 17, 31, 44, 52):
                await self.dead_letter(
                    "charge_card", "X_CARD_DECLINED", "terminal", tenant=self.rng.choice(TENANTS[:3])
                )
            if minute in (12, 29, 48):
                await self.dead_letter("send_email", "X_SMTP_TIMEOUT", "attempts-exhausted", tenant="acme")
            if minute in (22, 50):
                await self.dead_letter("deliver_webhook", "X_HTTP_410", "terminal", tenant="globex")
        self.clock.set(NOW - timedelta(seconds=90))
        await self.heartbeats(skip_stale=True)

    async def dead_letter(self, name: str, code: str, stop: str, *, tenant: str | None) -> str:
        queue, attempts = JOBS[name]
        worker = WORKERS[0][0] if queue in ("emails", "billing") else WORKERS[1][0]
        (jid,) = await self.enqueue(self.new(name, {"invoice_id": 1000 + self.n, "amount": 42.5}, tenant=tenant))
        tries = 1 if stop == "terminal" else attempts
        for attempt in range(1, tries + 1):
            claim = await self.claim_one(jid, worker)
            self.clock.advance(1.5)
            error = f"{code}: {'card declined by issuer' if code == 'X_CARD_DECLINED' else 'upstream did not answer in 30s'}"
            if attempt < tries:
                await self.d.job_nack(
                    nack=Nack(claim, "retry", run_at=self.now, error=error, error_code=code), now=self.now
                )
            else:
                await self.d.job_nack(
                    nack=Nack(claim, "dead", error=f"{error} (stop: {stop})", error_code=code, stop_reason=stop),
                    now=self.now,
                )  # type: ignore[arg-type]
        return jid

    # --- now ----------------------------------------------------------------------------------------

    async def live_states(self) -> None:
        app1, app2, batch = (w[0] for w in WORKERS)
        # A dead job with a step trace: charge completed, the receipt step failed on every attempt.
        (dead,) = await self.enqueue(
            self.new("send_receipt", {"order": "ord-981", "email": "pat@example.com"}, tenant="acme")
        )
        for attempt in range(1, 6):
            claim = await self.claim_one(dead, app1)
            if attempt == 1:
                await self.step(claim, "render", 1, took=0.4, result={"html_bytes": 18234})
            await self.step(
                claim,
                "send",
                2,
                status="failed",
                took=3.0,
                error="X_SMTP_TIMEOUT: smtp.example.com:587 did not answer",
                attempt=attempt,
            )
            stop = attempt == 5
            await self.d.job_nack(
                nack=Nack(
                    claim,
                    "dead" if stop else "retry",
                    run_at=self.now,
                    error="X_SMTP_TIMEOUT: smtp.example.com:587 did not answer"
                    + (" (stop: attempts-exhausted)" if stop else ""),
                    error_code="X_SMTP_TIMEOUT",
                    stop_reason="attempts-exhausted" if stop else None,
                    traceback=SMTP_TRACEBACK,
                ),
                now=self.now,
            )
        self.clock.set(NOW - timedelta(seconds=60))
        # Running jobs: two reports hold both slots of generate_report's concurrency limit.
        running = []
        for i in range(2):
            (jid,) = await self.enqueue(
                self.new("generate_report", {"report": f"monthly-{i + 1}", "rows": 120_000}, tenant="initech")
            )
            claim = await self.claim_one(jid, app2)
            await self.d.slot_acquire(
                key="concurrency:generate_report",
                limit=REPORT_SLOTS,
                job_id=jid,
                worker=app2,  # type: ignore[attr-defined]
                now=self.now,
                lease_seconds=LEASE,
            )
            await self.step(claim, "query", 1, took=4.0, result={"rows": 120_000})
            running.append(claim)
        # ...so a third is parked by the limit (no attempt burned, no error).
        (parked,) = await self.enqueue(
            self.new("generate_report", {"report": "quarterly", "rows": 2_000_000}, tenant="acme")
        )
        claim = await self.claim_one(parked, app2)
        await self.d.job_nack(
            nack=Nack(
                claim,
                "park",
                run_at=self.now + timedelta(seconds=20),
                wait={"kind": "limit", "limit": "concurrency", "key": "concurrency:generate_report"},
            ),
            now=self.now,
        )
        # A job sleeping for three days, and one waiting for an approval event.
        (sleeper,) = await self.enqueue(
            self.new("provision_workspace", {"user_id": 7, "plan": "team"}, tenant="globex", key="user:7")
        )
        claim = await self.claim_one(sleeper, app2)
        await self.step(claim, "create", 1, took=1.2, result={"workspace": "ws-7"})
        until = self.now + timedelta(days=3)
        await self.step(claim, "settle", 2, kind="sleep", status="waiting", took=0.0, wait={"until": until.isoformat()})
        await self.d.job_nack(
            nack=Nack(
                claim, "suspend", run_at=until, wait={"kind": "sleep", "step": "settle", "until": until.isoformat()}
            ),
            now=self.now,
        )
        (waiter,) = await self.enqueue(
            self.new("provision_workspace", {"user_id": 8, "plan": "enterprise"}, tenant="acme", key="user:8")
        )
        claim = await self.claim_one(waiter, app2)
        await self.step(claim, "create", 1, took=0.9, result={"workspace": "ws-8"})
        timeout = self.now + timedelta(hours=24)
        wait = {
            "kind": "event",
            "step": "approved",
            "event": "workspace.approved",
            "match": {"workspace": "ws-8"},
            "timeout_at": timeout.isoformat(),
        }  # the wait the engine writes (engine/runtime/steps.py)
        await self.step(claim, "approved", 2, kind="event", status="waiting", took=0.0, wait=wait)
        # As the engine suspends it: until its next poll for the event, not until the timeout (its
        # last poll was 10 s before NOW).
        poll = NOW - timedelta(seconds=10) + timedelta(seconds=DEFAULT_EVENT_POLL)
        await self.d.job_nack(nack=Nack(claim, "suspend", run_at=min(poll, timeout), wait=wait), now=self.now)
        # A retrying email: failed once, delayed until its backoff ends.
        (retrying,) = await self.enqueue(
            self.new("send_email", {"to": "lee@example.com", "template": "welcome"}, tenant="globex")
        )
        claim = await self.claim_one(retrying, app1)
        await self.d.job_nack(
            nack=Nack(
                claim,
                "retry",
                run_at=self.now + timedelta(minutes=4),
                error="X_SMTP_TIMEOUT: upstream did not answer in 30s",
                error_code="X_SMTP_TIMEOUT",
            ),
            now=self.now,
        )
        # Running emails and a billing job on app1.
        for to in ("kim@example.com", "ola@example.com"):
            (jid,) = await self.enqueue(self.new("send_email", {"to": to, "template": "digest"}, tenant="acme"))
            await self.claim_one(jid, app1)
        (ledger,) = await self.enqueue(
            self.new("sync_ledger", {"account": 31337, "since": "2025-12-31"}, tenant="initech")
        )
        await self.claim_one(ledger, app1)
        self.clock.set(NOW)
        # app2 renews the reports it runs, as a live worker does: their job and slot leases end
        # after NOW, so the parked report's "why" names live holders and when their leases end.
        renewed = NOW - timedelta(seconds=10)
        await self.d.job_renew_many(claims=running, now=renewed, lease_seconds=LEASE)
        await self.d.slot_renew_many(
            worker=app2,
            job_ids=[c.job_id for c in running],
            now=renewed,  # type: ignore[attr-defined]
            lease_seconds=LEASE,
        )
        # Waiting work: an old backlog in billing (the oldest-ready age crosses the alert), a delayed batch,
        # hostile and huge inputs, and a paused queue holding webhooks.
        await self.enqueue(
            *(
                self.new(
                    "charge_card",
                    {"invoice_id": 40 + i, "amount": 19.99 + i},
                    tenant=TENANTS[i % 3],
                    run_at=NOW - timedelta(minutes=7, seconds=-20 * i),
                )
                for i in range(4)
            )
        )
        await self.enqueue(
            *(
                self.new(
                    "send_email",
                    {"to": f"batch{i}@example.com", "template": "newsletter"},
                    tenant="globex",
                    run_at=NOW + timedelta(minutes=30),
                )
                for i in range(6)
            )
        )
        await self.enqueue(
            self.new(
                "send_email",
                {
                    "to": "eve@example.com",
                    "subject": "\x1b[2J\x1b[31mpwned\x07 [bold red]markup[/]",
                    "body": "x" * 5000,
                    "blob": "".join(chr(i % 32 or 0x7F) for i in range(200)),
                },
                tenant="acme",
                run_at=NOW - timedelta(seconds=40),
            )
        )
        await self.enqueue(
            self.new(
                "send_email",
                {"to": "sam@example.com", "items": [{"sku": f"sku-{i}", "qty": i} for i in range(40)]},
                tenant="initech",
                run_at=NOW - timedelta(seconds=30),
            )
        )
        await self.enqueue(
            *(
                self.new(
                    "deliver_webhook",
                    {"url": f"https://hooks.example.com/{i}", "event": "invoice.paid"},
                    tenant="globex",
                    run_at=NOW - timedelta(minutes=3),
                )
                for i in range(3)
            )
        )
        await self.d.queue_pause(
            queue="webhooks",
            paused=True,
            actor="alice",
            note="INC-2041: receiver returns 410",  # type: ignore[attr-defined]
            now=NOW - timedelta(minutes=3),
        )
        # A cancelled job, for the history.
        (gone,) = await self.enqueue(
            self.new(
                "sync_ledger", {"account": 7, "since": "2025-12-01"}, tenant="acme", run_at=NOW + timedelta(hours=2)
            )
        )
        await self.d.job_cancel(job_id=gone, tenant=None, now=self.now, actor="bob", note="duplicate of a manual sync")
        await self.heartbeats(skip_stale=True)
        for wid, in_use in ((app1, 3), (app2, 2)):
            await self.d.worker_heartbeat(id=wid, in_use=in_use, stopping=False, now=self.now)  # type: ignore[attr-defined]
        del running, batch


async def seed_state(driver: Driver, clock: FakeClock, ids: IdFactory, *, seed: int = 7) -> None:
    """Play the seeded hour onto ``driver``; leaves ``clock`` at NOW."""
    clock.set(START)
    s = _Seeder(driver, clock, ids, seed)
    await s.hour_of_traffic()
    await s.live_states()


def _run(coro: Any) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(1) as pool:  # called from a running loop (an async test): seed on another
        return pool.submit(asyncio.run, coro).result()


def seeded_engine(*, seed: int = 7, empty: bool = False) -> Engine:
    """A memory engine on a FakeClock stopped at NOW, holding the seeded hour (or nothing)."""
    from engine.drivers.memory import MemoryDriver

    clock = FakeClock(START)
    ids = IdFactory(clock, seed=seed)
    driver = MemoryDriver()
    if not empty:
        _run(seed_state(driver, clock, ids, seed=seed))
    clock.set(NOW)
    return Engine(driver, clock=clock, ids=ids)


def seeded_source(*, seed: int = 7, read_only: bool = False, empty: bool = False, actor: str = "console:test"):  # type: ignore[no-untyped-def]
    from console.source import Source

    return Source(
        seeded_engine(seed=seed, empty=empty),
        read_only=read_only,
        actor=actor,
        database="memory (seeded demo)",
        driver="memory",
    )
