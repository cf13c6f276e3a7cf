"""Every modal at 80x24: the count, the options and the buttons on screen, the body scrolled."""

from __future__ import annotations

from console.app import JobsConsole
from tests.console.conftest import SMALL, modal

STEP_JOB = ["2", "slash", *"name=send_receipt", "enter", "enter"]
EVENT_JOB = ["2", "slash", *"search=user:8", "enter", "enter"]


def test_modal_bulk_retry_80x24(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SMALL, run_before=modal("3", "X"))


def test_modal_bulk_result_80x24(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SMALL, run_before=modal("3", "X", "y"))


def test_modal_pause_80x24(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SMALL, run_before=modal("down", "p"))


def test_modal_resume_80x24(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SMALL, run_before=modal("end", "p"))


def test_modal_cancel_job_80x24(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SMALL, run_before=modal("2", "slash", *"state=running", "enter", "c"))


def test_modal_step_chooser_80x24(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SMALL, run_before=modal(*STEP_JOB, "f"))


def test_modal_retry_from_step_80x24(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SMALL, run_before=modal(*STEP_JOB, "f", "enter"))


def test_modal_send_event_80x24(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SMALL, run_before=modal(*EVENT_JOB, "e"))


def test_modal_discard_job_80x24(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SMALL, run_before=modal(*STEP_JOB, "d"))


def test_modal_discard_group_80x24(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SMALL, run_before=modal("3", "down", "d"))


def test_modal_retry_marked_jobs_80x24(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SMALL, run_before=modal("2", "t", "t", "t", "space", "space", "x"))


def test_modal_cancel_marked_of_mixed_states_80x24(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SMALL, run_before=modal("2", "space", "space", "c"))


def test_modal_drain_worker_80x24(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SMALL, run_before=modal("4", "d"))


def test_modal_drain_marked_workers_80x24(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SMALL, run_before=modal("4", "space", "space", "d"))


def test_modal_palette_finds_by_description_80x24(snap_compare, app: JobsConsole) -> None:
    # "cron" is in no command's name: the palette shows Schedules, whose description holds it.
    assert snap_compare(app, terminal_size=SMALL, run_before=modal("ctrl+p", *"cron"))


def test_modal_bulk_progress_80x24(snap_compare, app: JobsConsole) -> None:
    # Paced at 10 a second: the first batch has landed and the pace holds the rest on the stopped clock.
    pace = ["shift+tab"] * 4 + ["space"]  # from Leave it: Confirm, the note, with children, pace
    assert snap_compare(app, terminal_size=SMALL, run_before=modal("3", "X", *pace, "y"))


def test_modal_bulk_stopped_80x24(snap_compare, app: JobsConsole) -> None:
    # s between two paced batches: the result is titled stopped and says what was left as it was.
    pace = ["shift+tab"] * 4 + ["space"]
    assert snap_compare(app, terminal_size=SMALL, run_before=modal("3", "X", *pace, "y", "s"))
