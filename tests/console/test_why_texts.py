"""Why-texts say something true and specific: a fraction of a token is no token, a refill under a
second away is not "in 0s", a limit's heading names the limit, a running slot holder renews its
slot, an event wait's next check is not its timeout, a queue nothing holds back says so."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from console.screens.why import cause_text
from engine.introspect.why import _in, _tokens_sentence
from engine.projections import Cause, SlotHolder
from engine.types import JobState


def test_a_fraction_of_a_token_reads_as_no_whole_token_and_never_refills_in_0s() -> None:
    text = _tokens_sentence("smtp", 0.01, _in(0.4))
    assert "no whole token left" in text and "in under a second" in text and "0s" not in text


def test_whole_tokens_read_as_whole_tokens() -> None:
    assert "had 3 tokens left" in _tokens_sentence("smtp", 3.7, _in(12))
    assert "in 12s" in _tokens_sentence("smtp", 3.7, _in(12))


NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


def test_a_limit_cause_heading_names_which_limit() -> None:
    shed = Cause("limit", "Shed by the rate limit tenant:acme; it is tried again in 3s.", key="tenant:acme",
                 limit_kind="rate", until=NOW + timedelta(seconds=3))  # fmt: skip
    said = cause_text(shed, NOW).plain
    assert said.startswith("● Shed by the rate limit · tenant:acme\n")
    assert "tried again 12:00:03 (in 3s)" in said
    queue_level = Cause("limit", "2 jobs ...", key="concurrency:render", limit_kind="concurrency", count=2)
    assert cause_text(queue_level, NOW).plain.startswith(
        "● Shed by the concurrency limit · concurrency:render (2 jobs)"
    )


def test_a_running_slot_holder_reads_as_renewed_not_as_a_lease_about_to_end() -> None:
    holders = (
        SlotHolder("019b796d-d600-7027-a9b3-b30678e51061", "w1", NOW + timedelta(seconds=23), JobState.RUNNING,
                   NOW - timedelta(minutes=4)),
        SlotHolder("019b796d-d600-7027-a9b3-b30678e51062", "w2", NOW + timedelta(seconds=9), JobState.COMPLETED),
    )  # fmt: skip
    said = cause_text(Cause("slots", "engine text", key="concurrency:r", limit=2, holders=holders), NOW).plain
    assert said.startswith("● Concurrency slots full · concurrency:r\n  engine text")
    assert "holder b30678e51061 on w1, running since 11:56:00 (4m00s ago); its slot is renewed while it runs" in said
    assert "holder b30678e51062 on w2, completed, not running; its slot frees in 9s" in said
    assert "lease ends" not in said


def test_an_event_wait_shows_its_next_check_and_its_timeout_as_two_facts() -> None:
    c = Cause("event", "Waiting ...", event="invoice.paid", until=NOW + timedelta(hours=1),
              next_check=NOW + timedelta(seconds=4))  # fmt: skip
    facts = cause_text(c, NOW).plain.splitlines()[2]
    assert facts.startswith("  next check 12:00:04 (in 4s) · times out 13:00:00 (in 1h00m)")
    forever = cause_text(Cause("event", "Waiting ...", event="e", next_check=NOW + timedelta(seconds=4)), NOW)
    assert "no timeout" in forever.plain and "times out" not in forever.plain


async def test_the_why_screen_of_a_queue_nothing_holds_back_says_so() -> None:
    from console.app import JobsConsole
    from console.demo.world import seeded_source
    from console.screens.why import WhyScreen
    from engine.testing import make_job
    from tests.console.conftest import SIZE, settle

    source = seeded_source()
    await make_job(source.engine.driver, source.engine.ids, source.now(), state=JobState.COMPLETED, queue="quiet")
    app = JobsConsole(source, refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await app.push_screen(WhyScreen(queue="quiet"))
        await settle(pilot)
        shown = str(app.screen.query_one("#causes").render())
        assert "● Nothing holds it back" in shown and "Nothing holds queue quiet back: no job waits in it" in shown


async def test_the_why_of_a_queue_asks_why_it_does_not_drain_as_its_key_says() -> None:
    """y on the Overview is "why is the selected queue not draining?": a queue with completions
    every minute is running, and its why screen asked why it was "not running"."""
    from console.actions import for_scope
    from console.app import JobsConsole
    from console.demo.world import seeded_source
    from tests.console.conftest import SMALL, settle

    (why,) = [a for a in for_scope("overview") if a.action == "why_queue"]
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        queue = app.screen.query_one("#queues").selected_key
        await pilot.press("y")
        await settle(pilot)
        title = str(app.screen.query_one("#why-title").render())
        assert title == f"Why is queue {queue} not draining?" and "not draining?" in why.help, title


def test_a_dead_causes_fix_reads_on_a_line_of_its_own_under_its_text() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    c = Cause("dead", "Dead: X_DECLINED after attempt 1 of 1 (terminal).", code="X_DECLINED", fix="check the card")
    lines = cause_text(c, now).plain.splitlines()
    assert lines[1].strip() == "Dead: X_DECLINED after attempt 1 of 1 (terminal)."
    assert lines[2].strip() == "fix: check the card"
