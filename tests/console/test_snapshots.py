"""One snapshot per screen per state that matters: busy (the seeded hour), empty, a confirm
dialog, the database-down banner, read-only, 80x24 and no colour. Behaviour is asserted by the
Pilot tests; these pin what the operator sees. Regenerate: pytest tests/console --snapshot-update."""

from __future__ import annotations

import pytest

from console.app import JobsConsole
from console.demo.world import seeded_source
from tests.console.conftest import SIZE, SMALL, drive, modal, outage_source


def test_overview_busy(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SIZE, run_before=drive())


def test_overview_empty(snap_compare, empty_app: JobsConsole) -> None:
    assert snap_compare(empty_app, terminal_size=SIZE, run_before=drive())


def test_overview_80x24(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SMALL, run_before=drive())


def test_overview_read_only(snap_compare, ro_app: JobsConsole) -> None:
    assert snap_compare(ro_app, terminal_size=SIZE, run_before=drive())


def test_overview_pause_confirm(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SIZE, run_before=drive("down", "down", "p"))


def test_overview_database_down(snap_compare) -> None:
    source, outage = outage_source()

    def cut(_pilot) -> None:  # type: ignore[no-untyped-def]
        outage.down = True

    app = JobsConsole(source, refresh=60)
    assert snap_compare(app, terminal_size=SIZE, run_before=drive(then=lambda p: (cut(p), p.press("r"))[1]))


def test_jobs_busy(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SIZE, run_before=drive("2"))


def test_jobs_empty(snap_compare, empty_app: JobsConsole) -> None:
    assert snap_compare(empty_app, terminal_size=SIZE, run_before=drive("2"))


def test_jobs_80x24(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SMALL, run_before=drive("2"))


def test_jobs_filtered(snap_compare, app: JobsConsole) -> None:
    keys = ["2", "slash", *"state=dead", "enter"]
    assert snap_compare(app, terminal_size=SIZE, run_before=drive(*keys))


def test_jobs_cancel_confirm(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SIZE, run_before=modal("2", "slash", *"state=running", "enter", "c"))


def test_job_detail_dead_with_steps(snap_compare, app: JobsConsole) -> None:
    keys = ["2", "slash", *"name=send_receipt", "enter", "enter"]
    assert snap_compare(app, terminal_size=SIZE, run_before=drive(*keys))


def test_job_detail_suspended_on_event(snap_compare, app: JobsConsole) -> None:
    keys = ["2", "slash", *"search=user:8", "enter", "enter"]
    assert snap_compare(app, terminal_size=SIZE, run_before=drive(*keys))


def test_job_detail_of_a_fan_in_says_where_its_jobs_stand(snap_compare, app: JobsConsole) -> None:
    keys = ["2", "slash", *"name=close_month", "enter", "enter"]
    assert snap_compare(app, terminal_size=SIZE, run_before=drive(*keys))


def test_job_detail_hostile_input(snap_compare, app: JobsConsole) -> None:
    keys = ["2", "slash", *"input.to=eve@example.com", "enter", "enter"]
    assert snap_compare(app, terminal_size=SIZE, run_before=drive(*keys))


def test_job_detail_traceback_of_the_last_failed_attempt(snap_compare, app: JobsConsole) -> None:
    keys = ["2", "slash", *"name=send_receipt", "enter", "enter", "end"]
    assert snap_compare(app, terminal_size=SIZE, run_before=drive(*keys))


def test_job_detail_traceback_unfolded(snap_compare, app: JobsConsole) -> None:
    keys = ["2", "slash", *"name=send_receipt", "enter", "enter", "u", "end"]
    assert snap_compare(app, terminal_size=SIZE, run_before=drive(*keys))


def test_job_detail_80x24(snap_compare, app: JobsConsole) -> None:
    keys = ["2", "slash", *"name=send_receipt", "enter", "enter"]
    assert snap_compare(app, terminal_size=SMALL, run_before=drive(*keys))


def test_retry_from_step_chooser(snap_compare, app: JobsConsole) -> None:
    keys = ["2", "slash", *"name=send_receipt", "enter", "enter", "f"]
    assert snap_compare(app, terminal_size=SIZE, run_before=drive(*keys))


def test_why_parked(snap_compare, app: JobsConsole) -> None:
    keys = ["2", "slash", *"state=parked", "enter", "y"]
    assert snap_compare(app, terminal_size=SIZE, run_before=drive(*keys))


def test_why_queue_paused(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SIZE, run_before=drive("end", "y"))


def test_why_queue_of_suspended_jobs_80x24(snap_compare, app: JobsConsole) -> None:
    # accounts holds only suspended jobs: they wait for a sleep and an event, never "nothing".
    assert snap_compare(app, terminal_size=SMALL, run_before=drive("home", "y"))


def test_dead_letters_busy(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SIZE, run_before=drive("3"))


def test_dead_letters_empty(snap_compare, empty_app: JobsConsole) -> None:
    assert snap_compare(empty_app, terminal_size=SIZE, run_before=drive("3"))


def test_dead_letters_80x24(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SMALL, run_before=drive("3"))


def test_dead_letters_bulk_dry_run(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SIZE, run_before=drive("3", "X"))


def test_dead_letters_read_only(snap_compare, ro_app: JobsConsole) -> None:
    assert snap_compare(ro_app, terminal_size=SIZE, run_before=drive("3"))


def test_workers_busy(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SIZE, run_before=drive("4"))


def test_workers_empty(snap_compare, empty_app: JobsConsole) -> None:
    assert snap_compare(empty_app, terminal_size=SIZE, run_before=drive("4"))


def test_activity_80x24(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SMALL, run_before=drive("a"))


def test_help(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SIZE, run_before=drive("question_mark"))


def test_help_80x24_read_only(snap_compare, ro_app: JobsConsole) -> None:
    assert snap_compare(ro_app, terminal_size=SMALL, run_before=drive("question_mark"))


NO_COLOR_KEYS = {"overview": (), "jobs": ("2",), "dead_letters": ("3",), "bulk_retry": ("3", "x")}


@pytest.mark.parametrize("screen", list(NO_COLOR_KEYS))
def test_no_color(snap_compare, monkeypatch: pytest.MonkeyPatch, screen: str) -> None:
    """NO_COLOR at 80x24: no colour at all (the terminal's own), states told by attributes and
    words: dead counts bold reverse, parked bold underline, suspended underlined, ages marked ! and
    !!, the paused queue marked ‖ (tests/console/test_palette_contrast.py checks every segment)."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = JobsConsole(seeded_source(), refresh=60)  # Textual reads (and pops) NO_COLOR here
    assert app.no_color
    assert snap_compare(app, terminal_size=SMALL, run_before=drive(*NO_COLOR_KEYS[screen]))


def test_queue_chart_80x24(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SMALL, run_before=drive("down", "g"))


def test_logs_of_a_job_80x24(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SMALL, run_before=drive("3", "enter", "enter", "l"))


def test_jobs_sorted_by_state_with_marks_80x24(snap_compare, app: JobsConsole) -> None:
    keys = ("2", "s", "s", "s", "s", "s", "space", "space")
    assert snap_compare(app, terminal_size=SMALL, run_before=drive(*keys))
