"""The demo's users: the traffic that feeds the demo application's jobs (jobs.py), seeded, so the
same seed gives the same sequence of jobs."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime

from console.demo.jobs import (
    TENANTS,
    charge_card,
    close_month,
    deliver_webhook,
    generate_report,
    import_contacts,
    next_midnight,
    nightly_digest,
    provision_workspace,
    send_email,
    send_receipt,
    sync_crm_contact,
    sync_ledger,
)
from engine import Enqueue


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
        domain = {"ok": "demo.example", "bounce": "bounce.example", "busy": "busy.example", "slow": "slow.example"}[
            kind
        ]
        return Enqueue(send_email, {"user_id": n, "to": f"user{n}@{domain}"}, tenant=self._tenant())

    def invoice(self, card: str = "ok") -> Enqueue:
        n = next(self._n)
        amount = self.rng.randrange(500, 250_000)
        return Enqueue(charge_card, {"invoice_id": n, "amount_cents": amount, "card": card}, tenant=self._tenant())

    def workspace(self, settle: float = 20.0, approve_after: int | None = 3) -> Enqueue:
        n = next(self._n)
        ws, tenant = f"ws-{n}", self._tenant()
        if approve_after is not None:
            self._pending.append((self._ticks + approve_after, ws, tenant))
        inp = {"user_id": n, "workspace": ws, "settle": settle, "owner": f"owner{n}@demo.example"}
        return Enqueue(provision_workspace, inp, tenant=tenant)

    def contact(self, crm: str = "ok", tenant: str | None = None) -> Enqueue:
        n = next(self._n)
        return Enqueue(sync_crm_contact, {"contact": n, "crm": crm}, tenant=tenant or self._tenant())

    def contact_import(self, broken: bool = False) -> Enqueue:
        n = next(self._n)
        return Enqueue(import_contacts, {"file": f"contacts-{n}.{'xls' if broken else 'csv'}", "rows": 250})

    def report(self, seconds: float = 4.0, name: str | None = None) -> Enqueue:
        report = name or f"monthly-{next(self._n)}"
        return Enqueue(generate_report, {"report": report, "seconds": seconds}, tenant="initech" if name else None)

    def receipt(self, slow: bool = False) -> Enqueue:
        n = next(self._n)
        email = f"buyer{n}@{'slow.example' if slow else 'demo.example'}"
        return Enqueue(send_receipt, {"order": f"ord-{n}", "email": email}, tenant=self._tenant())

    def ledger(self) -> Enqueue:
        n = next(self._n)
        return Enqueue(sync_ledger, {"account": n, "since": "2026-01-01"}, tenant=self._tenant())

    def webhook(self) -> Enqueue:
        n = next(self._n)
        url = "https://hooks.example.com/gone" if self.rng.random() < 0.3 else f"https://hooks.example.com/{n % 7}"
        return Enqueue(deliver_webhook, {"url": url, "event": "invoice.paid", "n": n}, tenant="globex")

    def month_close(self, n: int) -> Enqueue:
        """A month's close over four accounts: it fans out their statements and waits for them."""
        inp = {"month": f"2026-{n % 12 + 1:02d}-run{n}", "accounts": [101, 102, 103, 104]}
        return Enqueue(close_month, inp, tenant="initech")

    def digest(self, now: datetime) -> Enqueue:
        until = next_midnight(now.astimezone(UTC))
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
        specs += [self.report(seconds=6.0) for _ in range(3)]  # concurrency 2: one of them parks
        specs += [self.digest(now), self.receipt(), self.receipt(slow=True), self.ledger(), self.webhook()]
        specs += [
            Enqueue(send_email, {"user_id": next(self._n), "to": "later@demo.example"}, tenant="acme", delay=300.0)
        ]  # delayed
        specs.append(self.month_close(0))
        return specs

    def tick(self) -> list[Enqueue]:
        """One beat of steady traffic (the demo calls it every couple of seconds).

        Besides random work, a fixed cadence keeps every state a why-screen explains present at
        every moment: the umbrella tenant's contacts and the initech reports arrive faster than
        their rate limit and concurrency admit (parked), and cycle over a few keys so the live
        ones dedupe and the backlog stays bounded; workspaces sleep for two minutes and wait a
        minute for their approval; a failing input arrives every third beat."""
        self._ticks += 1
        r = self.rng.random
        specs = [self.email() for _ in range(self.rng.randrange(1, 4))]
        if r() < 0.6:
            specs.append(self.invoice())
        if r() < 0.35:
            specs.append(self.contact())
        if r() < 0.2:
            specs.append(self.receipt())
        if r() < 0.05:
            specs.append(self.ledger())
        if r() < 0.05:
            specs.append(self.contact_import(broken=r() < 0.5))
        specs += self._cadence()
        return specs

    def _cadence(self) -> list[Enqueue]:
        t, specs = self._ticks, []
        umbrella = [(t * 2 + i) % 6 for i in range(2)]
        specs += [Enqueue(sync_crm_contact, {"contact": 9000 + c, "crm": "ok"}, tenant="umbrella") for c in umbrella]
        # Ten-second reports every beat over twelve keys, through two slots: two run, the rest park
        # (enough of them that a month close filling the reports worker for a while leaves some parked).
        specs.append(self.report(seconds=10.0, name=f"weekly-{t % 12 + 1}"))
        if t % 10 == 0:
            specs.append(self.workspace(settle=120.0, approve_after=None))  # sleeping for two minutes
        if t % 10 == 5:
            specs.append(self.workspace(settle=1.0, approve_after=30))  # waits a minute for its event
        if t % 10 == 7:
            specs.append(self.month_close(t))  # four statements, then its fan-in goes on
        if t % 3 == 0:
            failing = ["declined", "gateway-down", "flaky", "bounce", "busy", "slow", "webhook", "receipt"]
            kind = failing[(t // 3) % len(failing)]
            if kind in ("bounce", "busy", "slow"):
                specs.append(self.email(kind))
            elif kind == "receipt":
                specs.append(self.receipt(slow=True))
            elif kind == "webhook":
                specs.append(self.webhook())  # into the paused queue until someone resumes it
            else:
                specs.append(self.invoice(kind))
        return specs

    def approvals_due(self) -> list[tuple[str, str]]:
        """(workspace, tenant) pairs whose approval event is due (an event reaches its tenant's waits)."""
        due = [(ws, tenant) for at, ws, tenant in self._pending if at <= self._ticks]
        self._pending = [p for p in self._pending if p[0] > self._ticks]
        return due
