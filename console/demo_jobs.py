"""The demo application `jobs-console demo` runs: job declarations and the traffic that feeds them.

Every scenario a screen can show is produced by real handlers on the real worker, never by
writing rows directly: durable steps, a rate limiter and a concurrency limit that shed (parked),
a long sleep, a wait for an event, and failures of every classification, so the dead letters
carry both stop reasons (``terminal`` and ``attempts-exhausted``).

What fails is decided by the INPUT (a declined card, a bouncing address), and the traffic picks
inputs from a seeded generator: the same seed gives the same sequence of jobs.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from engine import Enqueue, JobsError, RateLimit, RetryPolicy, job, register_error_codes, register_error_retry, task

# The demo app's own error codes, declared and classified the way an app does it.
DEMO_CODES = {
    "X_CARD_DECLINED": "the card issuer declined the charge",
    "X_MAILBOX_UNKNOWN": "the recipient's mailbox does not exist",
    "X_GATEWAY_TIMEOUT": "the payment gateway did not answer in time",
    "X_SMTP_THROTTLED": "the mail provider asked us to slow down",
    "X_CRM_UNAVAILABLE": "the CRM answered 503",
}
DEMO_RETRY = {
    "X_CARD_DECLINED": "terminal",  # retrying a declined card only annoys the issuer
    "X_MAILBOX_UNKNOWN": "terminal",
    "X_GATEWAY_TIMEOUT": "retryable",
    "X_SMTP_THROTTLED": "retry-after",
    "X_CRM_UNAVAILABLE": "retryable",
}
register_error_codes(DEMO_CODES)
register_error_retry(DEMO_RETRY)

QUEUES = ("emails", "billing", "accounts", "integrations", "reports")
TENANTS = ("acme", "globex", "initech", "umbrella")
APPROVAL_EVENT = "workspace.approved"


@dataclass
class Pace:
    """How long the demo's pretend work takes: 1.0 in the live demo, 0 in tests (no waiting)."""

    scale: float = 1.0

    async def __call__(self, seconds: float) -> None:
        if self.scale > 0 and seconds > 0:
            await asyncio.sleep(seconds * self.scale)


PACE = Pace()


def _fail(code: str, cause: str, fix: str, **kw: Any) -> JobsError:
    return JobsError(code, cause=cause, fix=fix, **kw)


# --- emails: two steps; a bouncing address is terminal, a throttling provider is retry-after ----


def _deliver(inp: dict[str, Any], attempt: int) -> dict[str, Any]:
    to = str(inp["to"])
    if to.endswith("@bounce.example"):
        raise _fail("X_MAILBOX_UNKNOWN", f"550 5.1.1 <{to}>: no such user", "remove the address from the list")
    if to.endswith("@busy.example") and attempt < 3:
        raise _fail("X_SMTP_THROTTLED", "421 4.7.0 try again in 2s", "wait for the retry", retry_after=2.0)
    return {"message_id": f"<{inp['user_id']}.{attempt}@mail.demo>", "to": to}


@job(
    name="send_welcome_email",
    queue="emails",
    idempotency_key=lambda inp: f"user:{inp['user_id']}",
    retry=RetryPolicy(attempts=4, backoff="fixed", delay=1.0),
    timeout=30,
)
async def send_welcome_email(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    body = await ctx.step.run("render", lambda: {"subject": f"Welcome, user {inp['user_id']}", "bytes": 4096})
    await PACE(0.4)
    sent = await ctx.step.run("deliver", lambda: _deliver(inp, ctx.attempt))
    return {"subject": body["subject"], **sent}


# --- billing: three steps; declined is terminal, a dead gateway exhausts the attempts ----------


def _charge(inp: dict[str, Any], attempt: int) -> dict[str, Any]:
    card = inp.get("card", "ok")
    if card == "declined":
        raise _fail(
            "X_CARD_DECLINED",
            f"issuer declined invoice {inp['invoice_id']} (code 05)",
            "ask the customer for another card",
        )
    if card == "gateway-down" or (card == "flaky" and attempt < 2):
        raise _fail("X_GATEWAY_TIMEOUT", "POST /v1/charges timed out after 10s", "check https://status.gateway.example")
    return {"charge": f"ch_{inp['invoice_id']}", "amount_cents": inp["amount_cents"]}


@job(
    name="charge_invoice",
    queue="billing",
    idempotency_key=lambda inp: f"invoice:{inp['invoice_id']}",
    retry=RetryPolicy(attempts=3, backoff="exponential", delay=1.0, max_delay=4.0),
    timeout=60,
    step_timeout=20,
)
async def charge_invoice(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    hold = await ctx.step.run("reserve", lambda: {"hold": f"h_{inp['invoice_id']}"})
    await PACE(0.6)
    charge = await ctx.step.run("charge", lambda: _charge(inp, ctx.attempt))
    await PACE(0.2)
    receipt = await ctx.step.run("receipt", lambda: {"receipt": f"r_{inp['invoice_id']}"})
    return {**hold, **charge, **receipt}


# --- accounts: a durable sleep, then a wait for an approval event ------------------------------


@job(
    name="provision_workspace",
    queue="accounts",
    idempotency_key=lambda inp: f"workspace:{inp['workspace']}",
    retry=RetryPolicy(attempts=5),
    timeout=120,
    event_poll=5.0,
)
async def provision_workspace(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    ws = await ctx.step.run("create", lambda: {"id": inp["workspace"], "region": "eu-west-1"})
    await ctx.step.sleep("settle", float(inp.get("settle", 20)))
    approval = await ctx.step.wait_for_event(
        "approved", event=APPROVAL_EVENT, match={"workspace": ws["id"]}, timeout=3600
    )
    await ctx.step.run("notify", lambda: {"notified": inp.get("owner", "owner@demo.example")})
    return {"workspace": ws["id"], "approved_by": (approval or {}).get("by")}


def _next_midnight(now: datetime) -> datetime:
    return (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)


@job(name="nightly_digest", queue="reports", idempotency_key=lambda inp: f"digest:{inp['day']}")
async def nightly_digest(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    # Sleeps until the night (a suspension burns no attempt and is not an error, I7).
    until = datetime.fromisoformat(inp["until"])
    await ctx.step.sleep_until("night", until)
    return await ctx.step.run("send", lambda: {"digest": inp["day"]})


# --- integrations: a rate limiter that sheds, a retryable CRM, an unclassified crash ----------


def _crm(inp: dict[str, Any]) -> dict[str, Any]:
    if inp.get("crm") == "down":
        raise _fail("X_CRM_UNAVAILABLE", "PUT /contacts answered 503 Service Unavailable", "retry when the CRM is back")
    return {"crm_id": f"c-{inp['contact']}"}


@job(
    name="sync_crm_contact",
    queue="integrations",
    idempotency_key=lambda inp: f"contact:{inp['contact']}",
    retry=RetryPolicy(attempts=2, backoff="fixed", delay=1.0),
    rate_limit=RateLimit(limit=2, per=5.0, key=lambda inp, tenant: tenant or "-"),
)
async def sync_crm_contact(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    await PACE(0.3)
    return await ctx.step.run("push", lambda: _crm(inp))


def _parse_rows(inp: dict[str, Any]) -> dict[str, Any]:
    if inp.get("file", "").endswith(".xls"):
        # A plain exception, no engine code: unclassified, so it follows the backoff to the end.
        raise ValueError(f"{inp['file']}: row 17: expected 4 columns, found 3")
    return {"rows": int(inp.get("rows", 100))}


@job(
    name="import_contacts",
    queue="integrations",
    idempotency_key=lambda inp: f"import:{inp['file']}",
    retry=RetryPolicy(attempts=2, backoff="fixed", delay=1.0),
)
async def import_contacts(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    await PACE(0.5)
    return await ctx.step.run("parse", lambda: _parse_rows(inp))


# --- reports: a fleet-wide concurrency of one, so a burst parks ------------------------------


@job(
    name="render_report",
    queue="reports",
    idempotency_key=lambda inp: f"report:{inp['report']}",
    concurrency=1,
    timeout=60,
)
async def render_report(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    await ctx.step.run("query", lambda: {"rows": 1200})
    await PACE(float(inp.get("seconds", 4)))
    return await ctx.step.run("render", lambda: {"pdf": f"{inp['report']}.pdf", "pages": 12})


DEMO_JOBS = (
    send_welcome_email,
    charge_invoice,
    provision_workspace,
    nightly_digest,
    sync_crm_contact,
    import_contacts,
    render_report,
)


# Cron tasks the demo's worker schedules (the Schedules screen): one every minute so the screen
# moves while you watch, and two on a business clock in other zones.
@task(name="demo.heartbeat_report", cron="* * * * *", queue="reports")
async def heartbeat_report(ctx, inp):  # type: ignore[no-untyped-def]
    await PACE(0.2)
    return {"for": inp["scheduled_for"]}


@task(name="demo.ledger_close", cron="0 18 * * 1-5", timezone="America/New_York", queue="reports", catch_up="latest")
async def ledger_close(ctx, inp):  # type: ignore[no-untyped-def]
    return {"for": inp["scheduled_for"]}


@task(name="demo.digest_paris", cron="30 7 * * *", timezone="Europe/Paris", queue="emails")
async def digest_paris(ctx, inp):  # type: ignore[no-untyped-def]
    return {"for": inp["scheduled_for"]}


DEMO_TASKS = (heartbeat_report, ledger_close, digest_paris)


# --- traffic ----------------------------------------------------------------------------------


@dataclass
class Traffic:
    """The demo's users: a first burst that shows every scenario, then a steady trickle.

    ``first_burst`` and ``tick`` return enqueue specs; ``approvals_due`` names the workspaces
    whose approval event should now be sent. Seeded, so a run can be reproduced.
    """

    seed: int = 7
    rng: random.Random = field(init=False)
    _n: itertools.count = field(init=False)  # type: ignore[type-arg]
    _pending: list[tuple[int, str, str]] = field(init=False, default_factory=list)
    _ticks: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self._n = itertools.count(1001)

    def _tenant(self) -> str:
        return self.rng.choice(TENANTS)

    def email(self, kind: str = "ok") -> Enqueue:
        n = next(self._n)
        domain = {"ok": "demo.example", "bounce": "bounce.example", "busy": "busy.example"}[kind]
        return Enqueue(send_welcome_email, {"user_id": n, "to": f"user{n}@{domain}"}, tenant=self._tenant())

    def invoice(self, card: str = "ok") -> Enqueue:
        n = next(self._n)
        amount = self.rng.randrange(500, 250_000)
        return Enqueue(charge_invoice, {"invoice_id": n, "amount_cents": amount, "card": card}, tenant=self._tenant())

    def workspace(self, settle: float = 20.0, approve_after: int | None = 3) -> Enqueue:
        n = next(self._n)
        ws, tenant = f"ws-{n}", self._tenant()
        if approve_after is not None:
            self._pending.append((self._ticks + approve_after, ws, tenant))
        return Enqueue(
            provision_workspace, {"workspace": ws, "settle": settle, "owner": f"owner{n}@demo.example"}, tenant=tenant
        )

    def contact(self, crm: str = "ok", tenant: str | None = None) -> Enqueue:
        n = next(self._n)
        return Enqueue(sync_crm_contact, {"contact": n, "crm": crm}, tenant=tenant or self._tenant())

    def contact_import(self, broken: bool = False) -> Enqueue:
        n = next(self._n)
        return Enqueue(import_contacts, {"file": f"contacts-{n}.{'xls' if broken else 'csv'}", "rows": 250})

    def report(self, seconds: float = 4.0) -> Enqueue:
        n = next(self._n)
        return Enqueue(render_report, {"report": f"monthly-{n}", "seconds": seconds}, tenant=self._tenant())

    def digest(self, now: datetime) -> Enqueue:
        until = _next_midnight(now.astimezone(UTC))
        return Enqueue(nightly_digest, {"day": until.date().isoformat(), "until": until.isoformat()})

    def first_burst(self, now: datetime) -> list[Enqueue]:
        """Every scenario at least once, so each screen has something true to show at once."""
        specs = [self.email() for _ in range(6)]
        specs += [self.email("bounce"), self.email("busy")]
        specs += [self.invoice() for _ in range(4)]
        specs += [self.invoice("declined"), self.invoice("gateway-down"), self.invoice("flaky")]
        specs += [
            self.workspace(settle=15.0),
            self.workspace(settle=600.0, approve_after=None),
            self.workspace(settle=1.0, approve_after=None),
        ]  # the last one waits for its event
        specs += [self.contact(tenant="acme") for _ in range(6)]  # a burst the per-tenant limiter sheds
        specs += [self.contact("down")]
        specs += [self.contact_import(), self.contact_import(broken=True)]
        specs += [self.report(seconds=6.0) for _ in range(3)]  # concurrency 1: two of them park
        specs += [self.digest(now)]
        specs += [
            Enqueue(
                send_welcome_email, {"user_id": next(self._n), "to": "later@demo.example"}, tenant="acme", delay=300.0
            )
        ]  # delayed
        return specs

    def tick(self) -> list[Enqueue]:
        """One beat of steady traffic (the demo calls it every couple of seconds)."""
        self._ticks += 1
        r = self.rng.random
        specs = [self.email() for _ in range(self.rng.randrange(1, 4))]
        if r() < 0.6:
            specs.append(self.invoice())
        if r() < 0.12:
            specs.append(self.invoice(self.rng.choice(["declined", "gateway-down", "flaky"])))
        if r() < 0.08:
            specs.append(self.email(self.rng.choice(["bounce", "busy"])))
        if r() < 0.35:
            specs.append(self.contact())
        if r() < 0.15:
            specs.append(self.workspace(settle=self.rng.choice([5.0, 15.0, 30.0])))
        if r() < 0.1:
            specs.append(self.report(seconds=self.rng.choice([2.0, 4.0])))
        if r() < 0.05:
            specs.append(self.contact_import(broken=r() < 0.5))
        return specs

    def approvals_due(self) -> list[tuple[str, str]]:
        """(workspace, tenant) pairs whose approval event is due (an event reaches its tenant's waits)."""
        due = [(ws, tenant) for at, ws, tenant in self._pending if at <= self._ticks]
        self._pending = [p for p in self._pending if p[0] > self._ticks]
        return due
