"""The Activity screen answers "who did what, when, and why": under this session's own list, the
audit log from the database, every operator's actions newest first (who, what, on which target,
the note under it), read on the console's refresh, said rather than crashed on when the database
is lost, and pointing at `jobsctl audit --before ID` past the latest fifty."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta, timezone

from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import Static

from console import actions
from console.app import JobsConsole
from console.demo.world import PAUSED, seeded_source
from console.demo.world_backfills import HOLD_NOTE, QUEUE, RESUME_NOTE
from console.screens.activity import AUDIT_SHOWN, SAID, ActivityScreen, audit_text, said_of
from console.screens.help import help_text
from engine.audit import ACTIONS
from engine.records import AuditEntry
from tests.console.conftest import SMALL, drive, outage_source


def shown(app: JobsConsole, selector: str = "#audit") -> list[str]:
    """A part of the Activity screen as its lines read at 80 columns (less the body's padding)."""
    assert isinstance(app.screen, ActivityScreen)
    out = Console(width=78, record=True, file=io.StringIO())
    out.print(app.screen.query_one(selector, Static).content)
    return [line.rstrip() for line in out.export_text().splitlines()]


async def until_shown(pilot: Pilot, app: JobsConsole, words: str, seconds: float) -> None:
    """Let the console run (its own refresh timer) until ``words`` are in the audit log shown."""
    for _ in range(int(seconds / 0.05)):
        if any(words in line for line in shown(app)):
            return
        await pilot.pause(0.05)
    raise AssertionError(f"{words!r} not shown within {seconds}s: {shown(app)}")


async def test_activity_lists_the_databases_audit_entries_newest_first_with_who_what_target_and_note() -> None:
    source = seeded_source(empty=True)
    engine = source.engine
    await engine.operator(actor="alice").pause("billing", note="INC-7: the card gateway times out", create=True)
    engine.clock.advance(120)
    await engine.operator(actor="bob").resume("billing", note="INC-7: gateway answers again")
    app = JobsConsole(source, refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await drive("a")(pilot)
        assert shown(app, "#activity")[0] == "This session"  # the session's own list stays, first
        assert shown(app) == [
            "Audit log: every operator's actions, newest first",
            "12:02:00 bob   resumed queue billing",
            "               “INC-7: gateway answers again”",
            "12:00:00 alice paused queue billing",
            "               “INC-7: the card gateway times out”",
        ]


async def test_the_audit_log_shown_follows_the_consoles_refresh() -> None:
    source = seeded_source(empty=True)
    app = JobsConsole(source, refresh=0.5)
    async with app.run_test(size=SMALL) as pilot:
        await drive("a")(pilot)
        assert "No entry yet" in shown(app)[1]
        await source.engine.operator(actor="dana").pause("emails", note="INC-9", create=True)
        await until_shown(pilot, app, "dana paused queue emails", seconds=5)  # no key pressed


async def test_a_lost_database_while_reading_the_audit_log_is_said_and_the_entries_read_stay() -> None:
    source, outage = outage_source()
    app = JobsConsole(source, refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await drive()(pilot)
        outage.down = True
        await drive("a")(pilot)  # its first read meets the lost database
        banner = app.screen.query_one("#banner")
        assert banner.display and "database unreachable" in str(banner.render())
        assert shown(app)[1] == "Not read: database unreachable (r retries)."
        assert any("lost the database" in line for line in shown(app, "#activity"))  # the session says it
        outage.down = False
        await drive("r")(pilot)
        assert app.db_error is None and not banner.display
        assert any("alice paused queue webhooks" in line for line in shown(app))
        outage.down = True
        await drive("r")(pilot)
        assert banner.display and app.is_running
        said = shown(app)
        assert said[1] == "Not read: database unreachable; the entries are as last read (r retries)."
        assert any("alice paused queue webhooks" in line for line in said)


async def test_past_the_latest_fifty_entries_the_log_names_the_command_for_older_ones() -> None:
    for cycles, more in ((AUDIT_SHOWN // 2, False), (AUDIT_SHOWN // 2 + 1, True)):
        source = seeded_source(empty=True)
        ops = source.engine.operator(actor="erin")
        for i in range(cycles):  # a pause and a resume each
            await ops.pause("emails", note=f"drill {i}", create=True)
            await ops.resume("emails")
        entries = await source.audit(limit=2 * cycles)
        app = JobsConsole(source, refresh=60)
        async with app.run_test(size=SMALL) as pilot:
            await drive("a")(pilot)
            said = shown(app)
            assert sum("queue emails" in line for line in said) == AUDIT_SHOWN
            older = f"older entries: jobsctl audit --before {entries[AUDIT_SHOWN - 1].id}"
            assert (said[-1] == older) is more and not any(line.startswith("older") for line in said[:-1])


async def test_the_demo_world_has_its_operators_pauses_and_resume_in_the_audit_log() -> None:
    entries = await seeded_source().audit()
    queue, by, note = PAUSED
    said = [(e.actor, e.action, e.target, e.note) for e in entries if e.action.startswith("queue.")]
    assert said == [
        (by, "queue.pause", queue, note),
        ("carol", "queue.resume", QUEUE, RESUME_NOTE),
        ("bob", "queue.pause", QUEUE, HOLD_NOTE),
    ]


def test_every_action_the_audit_log_records_reads_in_words() -> None:
    assert set(SAID) == set(ACTIONS)


async def test_the_help_and_the_palette_describe_activity_with_the_audit_log() -> None:
    (activity,) = [a for a in actions.for_scope("global") if a.action == "activity"]
    assert "audit log" in activity.help
    out = Console(width=120, record=True, file=io.StringIO())
    out.print(help_text(read_only=False))
    (line,) = [ln for ln in out.export_text().splitlines() if ln.split()[:2] == ["a", "Activity"]]
    assert "audit log" in line
    app = JobsConsole(seeded_source(empty=True), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await drive()(pilot)
        (command,) = [c for c in app.get_system_commands(app.screen) if c.title.startswith("Activity")]
        assert "audit log" in command.help


def test_an_entry_reads_as_who_did_what_with_its_short_detail_and_the_note_under_it() -> None:
    at = datetime(2026, 1, 1, 12, tzinfo=UTC)
    bulk = AuditEntry(
        at, "ann", "bulk.retry", "queue=emails state=dead", None, "INC-3", {"changed": 1200, "planned": 1200}
    )
    assert said_of(bulk).plain == "retried in bulk: queue=emails state=dead · 1,200 changed, of 1,200 planned\n“INC-3”"
    job = "019b796d-d600-7050-8049-993d1a327537"
    step = AuditEntry(at, "ann", "job.retry_from_step", job, "acme", None, {"name": "send_receipt", "step": "send"})
    assert said_of(step).plain == "re-ran job 993d1a327537 (send_receipt) · tenant acme · from step send"
    start = {"pass": job, "environment": "production", "write": False, "forced": False, "job_id": job}
    dry = AuditEntry(at, "alice", "backfill.start", "accounts_email_lower", detail=start)
    assert (
        said_of(dry).plain
        == "started a pass of backfill accounts_email_lower · in production, a dry-run pass, job 993d1a327537"
    )
    hostile = AuditEntry(at, "x", "some.new_action", "\x1b[2Jq", detail={"ref": job, "on": True, "off": False})
    assert said_of(hostile).plain == "some.new_action \\x1b[2Jq · ref 993d1a327537, on"  # escaped; unknown words


def test_an_entry_answered_in_another_time_zone_is_stamped_in_utc_as_the_console_stamps_times() -> None:
    now = datetime(2026, 1, 1, 12, tzinfo=UTC)
    paris = AuditEntry(
        datetime(2026, 1, 1, 12, 30, tzinfo=timezone(timedelta(hours=1))), "ann", "queue.pause", "emails"
    )
    older = AuditEntry(datetime(2025, 12, 30, 9, 5, tzinfo=UTC), "bo", "queue.resume", "emails")
    out = Console(width=78, record=True, file=io.StringIO())
    out.print(audit_text([paris, older], now))
    assert [line.rstrip() for line in out.export_text().splitlines()[1:]] == [
        "11:30:00         ann paused queue emails",
        "2025-12-30 09:05 bo  resumed queue emails",
    ]
