"""The demo application: its traffic is reproducible and covers every scenario the screens show,
and its failures classify into both stop reasons (I4, I5) through the app's own registry."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from console.demo import jobs as d
from console.demo.traffic import Traffic
from engine.errors import JobsError
from engine.retry import decide_retry

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def _signature(specs: list) -> list[tuple]:  # type: ignore[type-arg]
    return [(s.job.name, repr(s.input), s.tenant, s.delay) for s in specs]


def test_the_same_seed_gives_the_same_traffic() -> None:
    a, b = Traffic(seed=3), Traffic(seed=3)
    assert _signature(a.first_burst(NOW)) == _signature(b.first_burst(NOW))
    assert [_signature(a.tick()) for _ in range(20)] == [_signature(b.tick()) for _ in range(20)]
    assert _signature(Traffic(seed=4).first_burst(NOW)) != _signature(Traffic(seed=3).first_burst(NOW))


def test_the_first_burst_enqueues_every_demo_job_and_every_failure_scenario() -> None:
    burst = Traffic().first_burst(NOW)
    # every one but render_statement, which close_month's fan-out enqueues
    assert {s.job.name for s in burst} == {h.name for h in d.DEMO_JOBS} - {d.render_statement.name}
    assert any(s.job is d.close_month for s in burst)
    cards = {s.input["card"] for s in burst if s.job is d.charge_card}
    assert {"declined", "gateway-down", "flaky", "ok"} <= cards
    assert any(s.delay for s in burst), "a delayed job"
    # more contacts of one tenant than the per-tenant rate limit allows: the limiter sheds
    acme = [s for s in burst if s.job is d.sync_crm_contact and s.tenant == "acme"]
    assert len(acme) > d.sync_crm_contact.rate_limit.limit
    assert sum(1 for s in burst if s.job is d.generate_report) > d.generate_report.concurrency


def test_idempotency_keys_collide_only_where_the_cadence_cycles_them() -> None:
    """Random traffic never reuses a key; the cadence's umbrella contacts and weekly reports cycle
    over a few keys on purpose, so while they are held back the live ones dedupe (a bounded backlog)."""
    t = Traffic()
    specs = t.first_burst(NOW) + [s for _ in range(50) for s in t.tick()]

    def cycled(s) -> bool:  # type: ignore[no-untyped-def]
        return s.input.get("contact", 0) >= 9000 or "weekly" in str(s.input.get("report"))

    keys = [(s.job.name, s.tenant or "", s.job.key_for(s.input)) for s in specs if not cycled(s)]
    assert len(keys) == len(set(keys))
    assert len({s.job.key_for(s.input) for s in specs if cycled(s)}) == 6 + 12


def test_the_cadence_keeps_every_explained_state_arriving() -> None:
    """Every ten beats (20 s) the traffic holds more contacts and reports than their limits admit,
    a workspace that sleeps, one that waits for its event, and failing inputs."""
    t = Traffic()
    window = [s for _ in range(10) for s in t.tick()]
    umbrella = [s for s in window if s.job is d.sync_crm_contact and s.tenant == "umbrella"]
    assert len(umbrella) / (10 * 2.0) > d.sync_crm_contact.rate_limit.limit / d.sync_crm_contact.rate_limit.per
    weekly = [s for s in window if s.job is d.generate_report and "weekly" in s.input["report"]]
    assert len(weekly) * 10.0 > d.generate_report.concurrency * 20.0  # 10 s reports, 20 s of two slots
    workspaces = [s for s in window if s.job is d.provision_workspace]
    assert {s.input["settle"] for s in workspaces} == {120.0, 1.0}
    signs = ("declined", "gateway", "flaky", "bounce", "busy", "slow", "gone")
    failing = [s for s in window if any(sign in str(s.input) for sign in signs)]
    assert len(failing) >= 3  # beats 3, 6 and 9


def test_approvals_are_due_a_few_ticks_after_their_workspace() -> None:
    t = Traffic()
    burst = t.first_burst(NOW)
    first = next(s for s in burst if s.job is d.provision_workspace)
    assert t.approvals_due() == []
    seen: list[tuple[str, str]] = []
    for _ in range(3):
        t.tick()
        seen += t.approvals_due()
    assert (first.input["workspace"], first.tenant) in seen


def _raised(fn, *args) -> JobsError | Exception:  # type: ignore[no-untyped-def]
    with pytest.raises(Exception) as info:
        fn(*args)
    return info.value


@pytest.mark.parametrize(
    ("fail", "attempt", "outcome", "stop"),
    [
        (lambda: d._charge({"invoice_id": 1, "amount_cents": 5, "card": "declined"}, 1), 1, "dead", "terminal"),
        (lambda: d._deliver({"user_id": 1, "to": "a@bounce.example"}, 1), 1, "dead", "terminal"),
        (
            lambda: d._charge({"invoice_id": 1, "amount_cents": 5, "card": "gateway-down"}, 3),
            3,
            "dead",
            "attempts-exhausted",
        ),
        (lambda: d._charge({"invoice_id": 1, "amount_cents": 5, "card": "gateway-down"}, 1), 1, "retry", None),
        (lambda: d._parse_rows({"file": "x.xls"}), 2, "dead", "attempts-exhausted"),  # unclassified
        (lambda: d._crm({"contact": 1, "crm": "down"}), 2, "dead", "attempts-exhausted"),
    ],
)
def test_i4_demo_failures_reach_both_stop_reasons(fail, attempt, outcome, stop) -> None:  # type: ignore[no-untyped-def]
    exc = _raised(fail)
    policy = {
        "X_CARD_DECLINED": d.charge_card,
        "X_GATEWAY_TIMEOUT": d.charge_card,
        "X_MAILBOX_UNKNOWN": d.send_email,
        "X_CRM_UNAVAILABLE": d.sync_crm_contact,
    }
    handle = policy.get(getattr(exc, "code", ""), d.import_contacts)
    decision = decide_retry(handle.retry, attempt, exc)
    assert (decision.outcome, decision.stop_reason) == (outcome, stop)


def test_i4_a_throttled_mailer_retries_after_the_delay_it_names() -> None:
    exc = _raised(d._deliver, {"user_id": 1, "to": "a@busy.example"}, 1)
    decision = decide_retry(d.send_email.retry, 1, exc)
    assert (decision.outcome, decision.delay, decision.classification) == ("retry", 2.0, "retry-after")
    assert d._deliver({"user_id": 1, "to": "a@busy.example"}, 3)["to"] == "a@busy.example"


def test_a_flaky_gateway_fails_once_then_charges() -> None:
    inp = {"invoice_id": 9, "amount_cents": 5, "card": "flaky"}
    assert getattr(_raised(d._charge, inp, 1), "code", None) == "X_GATEWAY_TIMEOUT"
    assert d._charge(inp, 2)["charge"] == "ch_9"
