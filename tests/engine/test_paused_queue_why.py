"""A queue's why leads with its pause while it is paused (no worker claims its jobs, so busy slots
are not what holds them), and busy slots are said with what they are busy with: a worker serving
several queues can fill every slot with the others' jobs while none of this queue's runs."""

from __future__ import annotations

from dataclasses import replace

from engine.introspect.why_queue import queue_causes
from engine.projections import Count
from tests.engine.test_why import NOW, queue


def busy(running: int = 0, **kw):  # type: ignore[no-untyped-def]
    """webhooks: 4 jobs ready, its workers' 4 slots all in use, ``running`` of them its own."""
    return replace(queue("webhooks", ready=4), running=Count(running), slots_in_use=4, **kw)


def test_a_paused_queue_leads_with_its_pause_and_does_not_blame_busy_slots() -> None:
    q = busy(paused=True, paused_by="ops", paused_at=NOW, pause_note="vendor outage")
    causes = queue_causes(q, workers=[], stale_after=30, now=NOW)
    assert causes[0].kind == "paused" and causes[0].count == 4
    assert causes[0].text == (
        "Queue webhooks is paused by ops since 2026-01-01 12:00:00 UTC (vendor outage). 4 jobs wait in it, "
        "claimed by no worker until it is resumed (jobsctl resume webhooks)."
    )
    assert all(c.kind != "backlog" for c in causes)
    assert not any("slots" in c.text for c in causes)


def test_slots_busy_with_other_queues_jobs_are_said_so_not_as_its_own_backlog_being_served() -> None:
    causes = queue_causes(busy(running=0), workers=[], stale_after=30, now=NOW)
    (backlog,) = (c for c in causes if c.kind == "backlog")
    assert backlog.text == (
        "All 4 worker slots serving webhooks are busy with other queues' jobs (no job of webhooks runs); "
        "4 jobs wait for one to free."
    )


def test_busy_slots_shared_with_other_queues_are_counted_apart() -> None:
    causes = queue_causes(busy(running=1), workers=[], stale_after=30, now=NOW)
    (backlog,) = (c for c in causes if c.kind == "backlog")
    assert "busy: 1 with its own jobs, 3 with other queues' jobs; 4 jobs wait" in backlog.text
    mine = queue_causes(busy(running=4), workers=[], stale_after=30, now=NOW)
    assert "are busy with its own jobs; 4 jobs wait for one to free." in next(
        c.text for c in mine if c.kind == "backlog"
    )
