"""The demo world's application: its job declarations (its traffic is traffic.py).

`jobs-console demo` runs these handlers on a real worker, and the seeded world (world.py) that the
snapshots and screenshots show is made of the same jobs, queues and tenants. Every scenario a
screen can show is produced by real handlers: durable steps, a rate limiter and a concurrency
limit that shed (parked), long sleeps, waits for an event, a fan-out and its fan-in, a paused queue, and failures of every
classification, so the dead letters carry both stop reasons (``terminal`` and
``attempts-exhausted``).

What fails is decided by the INPUT (a declined card, a bouncing address), and the traffic picks
inputs from a seeded generator: the same seed gives the same sequence of jobs.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from engine import Enqueue, JobsError, RateLimit, RetryPolicy, job, register_error_codes, register_error_retry, task

# The demo app's own error codes, declared and classified the way an app does it.
DEMO_CODES = {
    "X_CARD_DECLINED": "the card issuer declined the charge",
    "X_MAILBOX_UNKNOWN": "the recipient's mailbox does not exist",
    "X_GATEWAY_TIMEOUT": "the payment gateway did not answer in time",
    "X_SMTP_THROTTLED": "the mail provider asked us to slow down",
    "X_CRM_UNAVAILABLE": "the CRM answered 503",
    "X_SMTP_TIMEOUT": "the mail server did not answer",
    "X_HTTP_410": "the webhook receiver answered 410 Gone",
    "X_RENDERER_DOWN": "the PDF renderer refused the connection",
    "X_CLOSE_PARTIAL": "a month's statements did not all render",
}
DEMO_RETRY = {
    "X_CARD_DECLINED": "terminal",  # retrying a declined card only annoys the issuer
    "X_MAILBOX_UNKNOWN": "terminal",
    "X_GATEWAY_TIMEOUT": "retryable",
    "X_SMTP_THROTTLED": "retry-after",
    "X_CRM_UNAVAILABLE": "retryable",
    "X_SMTP_TIMEOUT": "retryable",
    "X_HTTP_410": "terminal",  # the receiver is gone: retrying cannot help
    "X_RENDERER_DOWN": "retryable",
    # A retry of the close alone answers its stored statements again: it takes them with it.
    "X_CLOSE_PARTIAL": "terminal",
}
register_error_codes(DEMO_CODES)
register_error_retry(DEMO_RETRY)

QUEUES = ("emails", "billing", "accounts", "integrations", "reports", "webhooks")
TENANTS = ("acme", "globex", "initech", "umbrella")
APPROVAL_EVENT = "workspace.approved"


@dataclass
class Pace:
    """How long the demo's pretend work takes: 1.0 in the live demo, 0 in tests (no waiting);
    on ``clock`` when one is set (a demo simulated on a FakeClock), else in real time."""

    scale: float = 1.0
    clock: Any = None

    async def __call__(self, seconds: float) -> None:
        if self.scale > 0 and seconds > 0:
            await (self.clock.sleep if self.clock is not None else asyncio.sleep)(seconds * self.scale)


PACE = Pace()


# --- emails: two steps; a bouncing address is terminal, a throttling provider is retry-after ----


def _deliver(inp: dict[str, Any], attempt: int) -> dict[str, Any]:
    to = str(inp["to"])
    if to.endswith("@bounce.example"):
        raise JobsError("X_MAILBOX_UNKNOWN", f"550 5.1.1 <{to}>: no such user", "remove the address from the list")
    if to.endswith("@slow.example"):
        raise JobsError("X_SMTP_TIMEOUT", "smtp.example.com:587 did not answer in 30s", "check the mail relay")
    if to.endswith("@busy.example") and attempt < 3:
        raise JobsError("X_SMTP_THROTTLED", "421 4.7.0 try again in 2s", "wait for the retry", retry_after=2.0)
    return {"message_id": f"<{inp.get('user_id', inp.get('order'))}.{attempt}@mail.demo>", "to": to}


@job(
    name="send_email",
    queue="emails",
    idempotency_key=lambda inp: f"mail:{inp['user_id']}:{inp.get('template', 'welcome')}",
    retry=RetryPolicy(attempts=5, backoff="fixed", delay=1.0),
    timeout=30,
)
async def send_email(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    template = inp.get("template", "welcome")
    body = await ctx.step.run("render", lambda: {"subject": f"{template} for user {inp['user_id']}", "bytes": 4096})
    await PACE(0.4)
    sent = await ctx.step.run("deliver", lambda: _deliver(inp, ctx.attempt))
    return {"subject": body["subject"], **sent}


@job(
    name="send_receipt",
    queue="emails",
    idempotency_key=lambda inp: f"receipt:{inp['order']}",
    retry=RetryPolicy(attempts=5, backoff="fixed", delay=1.0),
    timeout=30,
)
async def send_receipt(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    html = await ctx.step.run("render", lambda: {"html_bytes": 18234})
    await PACE(0.3)
    sent = await ctx.step.run("send", lambda: _deliver({**inp, "to": inp["email"]}, ctx.attempt))
    return {**html, **sent}


# --- billing: three steps; declined is terminal, a dead gateway exhausts the attempts ----------


def _charge(inp: dict[str, Any], attempt: int) -> dict[str, Any]:
    card = inp.get("card", "ok")
    if card == "declined":
        raise JobsError(
            "X_CARD_DECLINED",
            f"issuer declined invoice {inp['invoice_id']} (code 05)",
            "ask the customer for another card",
        )
    if card == "gateway-down" or (card == "flaky" and attempt < 2):
        raise JobsError(
            "X_GATEWAY_TIMEOUT", "POST /v1/charges timed out after 10s", "check https://status.gateway.example"
        )
    return {"charge": f"ch_{inp['invoice_id']}", "amount_cents": inp.get("amount_cents", 0)}


@job(
    name="charge_card",
    queue="billing",
    idempotency_key=lambda inp: f"invoice:{inp['invoice_id']}",
    retry=RetryPolicy(attempts=3, backoff="exponential", delay=1.0, max_delay=4.0),
    timeout=60,
    step_timeout=20,
)
async def charge_card(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    hold = await ctx.step.run("reserve", lambda: {"hold": f"h_{inp['invoice_id']}"})
    await PACE(0.6)
    charge = await ctx.step.run("charge", lambda: _charge(inp, ctx.attempt))
    await PACE(0.2)
    receipt = await ctx.step.run("receipt", lambda: {"receipt": f"r_{inp['invoice_id']}"})
    return {**hold, **charge, **receipt}


@job(
    name="sync_ledger",
    queue="billing",
    idempotency_key=lambda inp: f"ledger:{inp['account']}:{inp['since']}",
    retry=RetryPolicy(attempts=5),
    timeout=120,
)
async def sync_ledger(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    entries = await ctx.step.run("pull", lambda: {"entries": 40})
    await PACE(1.5)
    return await ctx.step.run("post", lambda: {"account": inp["account"], **entries})


# --- accounts: a durable sleep, then a wait for an approval event ------------------------------


@job(
    name="provision_workspace",
    queue="accounts",
    idempotency_key=lambda inp: f"user:{inp['user_id']}",
    retry=RetryPolicy(attempts=5),
    timeout=120,
    event_poll=30.0,  # an approval takes minutes; sending the event wakes the job at once anyway
)
async def provision_workspace(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    ws = await ctx.step.run("create", lambda: {"id": inp["workspace"], "region": "eu-west-1"})
    await ctx.step.sleep("settle", float(inp.get("settle", 20)))
    approval = await ctx.step.wait_for_event(
        "approved", event=APPROVAL_EVENT, match={"workspace": ws["id"]}, timeout=3600
    )
    await ctx.step.run("notify", lambda: {"notified": inp.get("owner", "owner@demo.example")})
    return {"workspace": ws["id"], "approved_by": (approval or {}).get("by")}


def next_midnight(now: datetime) -> datetime:
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
        raise JobsError(
            "X_CRM_UNAVAILABLE", "PUT /contacts answered 503 Service Unavailable", "retry when the CRM is back"
        )
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


# --- reports: a fleet-wide concurrency of two, so a burst parks ------------------------------


@job(
    name="generate_report",
    queue="reports",
    idempotency_key=lambda inp: f"report:{inp['report']}",
    concurrency=2,
    timeout=60,
)
async def generate_report(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    await ctx.step.run("query", lambda: {"rows": int(inp.get("rows", 1200))})
    await PACE(float(inp.get("seconds", 4)))
    return await ctx.step.run("render", lambda: {"pdf": f"{inp['report']}.pdf", "pages": 12})


# --- reports: a month's close fans out one statement per account and waits for them all -----


@job(
    name="render_statement",
    queue="reports",
    idempotency_key=lambda inp: f"statement:{inp['month']}:{inp['account']}",
    timeout=300,
)
async def render_statement(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    await PACE(3.0)
    return await ctx.step.run("render", lambda: _render(inp))


RENDERER = "pdf.internal:8443"


def _render(inp: dict[str, Any]) -> dict[str, Any]:
    return {"pdf": f"statement-{inp['month']}-{inp['account']}.pdf"}


def _renderer_refused(inp: dict[str, Any], attempt: int) -> dict[str, Any]:
    """What rendering a statement raises while the renderer is down: the world's outage of last
    month, over by the hour the demo shows (its live handlers find it up)."""
    raise JobsError(
        "X_RENDERER_DOWN",
        f"the PDF renderer at {RENDERER} refused the connection (account {inp['account']})",
        "retry once the renderer answers: jobsctl retry ID",
    )


@job(
    name="close_month",
    queue="reports",
    idempotency_key=lambda inp: f"close:{inp['month']}",
    timeout=60,
    priority=10,  # its looks at its statements are claimed ahead of the statements themselves
    event_poll=10.0,  # how far apart the fan-in looks at its statements, at most
)
async def close_month(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    specs = [Enqueue(render_statement, {"month": inp["month"], "account": a}, ctx.tenant) for a in inp["accounts"]]
    ids = await ctx.step.enqueue("fan-out", specs)  # one commit with its ids: each replay enqueues nothing
    statements = await ctx.step.wait_for_jobs("statements", ids, timeout=3600)
    missing = statements_missing(inp["month"], ids, statements)
    if missing is not None:
        raise missing
    return {"month": inp["month"], "statements": len(ids), "of": len(ids)}


def statements_missing(month: str, ids: list[str], statements: list[dict[str, Any]] | None) -> JobsError | None:
    """A month closes whole or not at all: the error of a close whose wait answered a statement
    that did not complete (or timed out: None), else None."""
    missing = [s["id"] for s in statements if s["state"] != "completed"] if statements is not None else ids
    if not missing:
        return None
    return JobsError(
        "X_CLOSE_PARTIAL",
        f"{len(missing)} of {len(ids)} statements for {month} did not render",
        "fix what stopped them, then: jobsctl retry ID --children",
    )


# --- webhooks: a receiver that is gone answers 410, terminal ----------------------------------


def _post(inp: dict[str, Any]) -> dict[str, Any]:
    if str(inp["url"]).endswith("/gone"):
        raise JobsError("X_HTTP_410", f"POST {inp['url']} answered 410 Gone", "remove the subscription")
    return {"status": 200}


@job(
    name="deliver_webhook",
    queue="webhooks",
    idempotency_key=lambda inp: f"hook:{inp['url']}:{inp['event']}:{inp.get('n', 0)}",
    retry=RetryPolicy(attempts=8, backoff="exponential", delay=1.0, max_delay=30.0),
)
async def deliver_webhook(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    await PACE(0.2)
    return await ctx.step.run("post", lambda: _post(inp))


DEMO_JOBS = (
    send_email,
    send_receipt,
    charge_card,
    sync_ledger,
    provision_workspace,
    nightly_digest,
    sync_crm_contact,
    import_contacts,
    generate_report,
    render_statement,
    close_month,
    deliver_webhook,
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


def failure(code: str, inp: dict[str, Any]) -> JobsError:
    """The error this app raises for ``code`` on ``inp``: how the demo world fails its dead letters,
    so they say what the handlers say (without a traceback: it would name this machine's paths)."""
    fail = {
        "X_CARD_DECLINED": _charge,
        "X_SMTP_TIMEOUT": _deliver,
        "X_HTTP_410": lambda inp, _: _post(inp),
        "X_RENDERER_DOWN": _renderer_refused,
    }[code]
    try:
        fail(inp, 1)
    except JobsError as exc:
        return exc.with_traceback(None)
    raise AssertionError(f"{inp} does not fail with {code}")
