"""engine/schedule.py and engine/tasks.py without a database: cron arithmetic across DST, the
catch-up selection, and what a declaration refuses."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from engine.errors import JobsError
from engine.schedule import Cron, Step, occurrence_key, parse_cron, plan_catch_up, trigger_key
from engine.tasks import TaskDefinition, task


def _utc(*a: int) -> datetime:
    return datetime(*a, tzinfo=UTC)  # type: ignore[misc]


def test_i21_an_occurrence_key_is_the_task_name_and_the_instant_in_utc() -> None:
    paris = datetime(2026, 3, 29, 3, 0, tzinfo=Cron("0 3 * * *", "Europe/Paris").zone)
    assert occurrence_key("nightly", paris) == "nightly@2026-03-29T01:00:00Z"
    assert trigger_key("nightly", paris) != occurrence_key("nightly", paris)


@pytest.mark.parametrize(
    ("zone", "expr", "start", "want"),
    [
        # Spring forward: 02:30 does not exist that night; the library runs it at 03:00 once.
        ("Europe/Paris", "30 2 * * *", _utc(2026, 3, 28, 12), ["03-29 01:00", "03-30 00:30"]),
        ("America/New_York", "30 2 * * *", _utc(2026, 3, 7, 12), ["03-08 07:00", "03-09 06:30"]),
        # Fall back: 02:30 (Paris) and 01:30 (New York) happen twice on the wall; fired once.
        ("Europe/Paris", "30 2 * * *", _utc(2026, 10, 24, 12), ["10-25 00:30", "10-26 01:30"]),
        ("America/New_York", "30 1 * * *", _utc(2026, 10, 31, 12), ["11-01 05:30", "11-02 06:30"]),
        # An hourly task runs every elapsed hour through both changes.
        ("Europe/Paris", "0 * * * *", _utc(2026, 10, 24, 23, 30), ["10-25 00:00", "10-25 01:00", "10-25 02:00"]),
        ("Europe/Paris", "0 * * * *", _utc(2026, 3, 29, 0, 30), ["03-29 01:00", "03-29 02:00", "03-29 03:00"]),
    ],
)
def test_i21_dst_changes_neither_skip_nor_double_an_occurrence(
    zone: str, expr: str, start: datetime, want: list[str]
) -> None:
    it = Cron(expr, zone).after(start)
    assert [next(it).strftime("%m-%d %H:%M") for _ in want] == want


def test_occurrences_never_go_back_from_inside_a_fall_back_hour() -> None:
    # cronsim answers 00:30Z (02:30 CEST) when started at 01:00Z (02:00 CET): before the start.
    cron = Cron("30 2 * * *", "Europe/Paris")
    assert cron.next_after(_utc(2026, 10, 25, 1, 0)) == _utc(2026, 10, 26, 1, 30)
    assert cron.next_after(_utc(2026, 10, 25, 0, 30)) == _utc(2026, 10, 26, 1, 30)


def test_due_is_bounded_and_says_when_more_are_due() -> None:
    cron = Cron("* * * * *")
    due, more = cron.due(_utc(2026, 1, 1), _utc(2026, 1, 2), limit=10)
    assert len(due) == 10 and more
    due, more = cron.due(_utc(2026, 1, 1), _utc(2026, 1, 1, 0, 5))
    assert len(due) == 5 and not more and due[-1] == _utc(2026, 1, 1, 0, 5)


def test_the_expression_reads_in_words() -> None:
    assert Cron("0 2 * * 1-5", "Europe/Paris").words == "At 02:00 on Monday through Friday"


HOUR = [_utc(2026, 1, 1, 12, m) for m in range(5, 60, 5)] + [_utc(2026, 1, 1, 13, 0)]


@pytest.mark.parametrize(
    ("policy", "now", "want_enqueued", "want_skipped"),
    [
        # Back at 13:00:02: 13:00 is on time whatever the policy; 12:05-12:55 were missed.
        ("skip", _utc(2026, 1, 1, 13, 0, 2), [_utc(2026, 1, 1, 13, 0)], 11),
        ("latest", _utc(2026, 1, 1, 13, 0, 2), [_utc(2026, 1, 1, 12, 55), _utc(2026, 1, 1, 13, 0)], 10),
        ("all", _utc(2026, 1, 1, 13, 0, 2), HOUR[-4:], 8),
        # Back at 13:02:30, past the grace: every one of them was missed.
        ("skip", _utc(2026, 1, 1, 13, 2, 30), [], 12),
        ("latest", _utc(2026, 1, 1, 13, 2, 30), [_utc(2026, 1, 1, 13, 0)], 11),
        ("all", _utc(2026, 1, 1, 13, 2, 30), HOUR[-3:], 9),
    ],
)
def test_i21_catch_up_selects_the_missed_occurrences_by_policy(
    policy: str, now: datetime, want_enqueued: list[datetime], want_skipped: int
) -> None:
    steps = plan_catch_up(HOUR, now=now, policy=policy, max_catch_up=3, grace=35.0)  # type: ignore[arg-type]
    assert [s.at for s in steps if s.enqueue] == want_enqueued
    assert sum(s.skipped for s in steps) == want_skipped
    assert steps[-1].at == HOUR[-1]  # the watermark settles every due occurrence
    assert all(s.skipped == 0 for s in steps[1:])  # the count rides on the first write


def test_a_truncated_scan_is_skipped_whole() -> None:
    assert plan_catch_up(HOUR, now=HOUR[-1], policy="all", max_catch_up=3, grace=35.0, truncated=True) == [
        Step(HOUR[-1], 12, False)
    ]
    assert plan_catch_up([], now=HOUR[-1], policy="skip", max_catch_up=1, grace=1.0) == []


def _handler(ctx, inp):  # type: ignore[no-untyped-def]
    return None


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"cron": "*/5 * * *"}, "'*/5 * * *'"),
        ({"cron": "61 * * * *"}, "'61 * * * *': Bad minute"),
        ({"cron": "0 0 31 2 *"}, "'0 0 31 2 *'"),
        ({"cron": "* * * * *", "timezone": "Mars/Olympus"}, "'Mars/Olympus'"),
        ({"cron": "* * * * *", "catch_up": "some"}, "catch_up='some'"),
        ({"cron": "* * * * *", "catch_up": "skip", "max_catch_up": 3}, "max_catch_up=3 with catch_up='skip'"),
        ({"cron": "* * * * *", "catch_up": "all", "max_catch_up": 0}, "max_catch_up=0"),
        ({"cron": "* * * * *", "input": {"at": object()}}, "X_INPUT_NOT_JSON"),
        ({"cron": "* * * * *", "cronn": "x"}, "did you mean 'cron'"),
    ],
)
def test_a_bad_task_is_refused_at_declaration_naming_the_value(options: dict[str, object], needle: str) -> None:
    with pytest.raises(JobsError) as err:
        task(name="t.bad", **options)(_handler)  # type: ignore[arg-type]
    assert needle in str(err.value) and err.value.fix


def test_a_task_is_a_job_keyed_by_its_occurrence() -> None:
    @task(name="t.ok", cron="0 2 * * *", timezone="Europe/Paris", catch_up="all", max_catch_up=5, input={"a": 1})
    async def nightly(ctx, inp):  # type: ignore[no-untyped-def]
        return inp

    assert isinstance(nightly, TaskDefinition) and nightly.max_catch_up == 5
    assert nightly.key_for({"scheduled_for": "2026-01-01T01:00:00Z"}) == "t.ok@2026-01-01T01:00:00Z"
    assert (nightly.cron.expr, nightly.cron.timezone, nightly.fixed_input) == ("0 2 * * *", "Europe/Paris", {"a": 1})


def test_two_tasks_with_one_name_are_refused_at_declaration() -> None:
    task(name="t.twice", cron="* * * * *")(_handler)
    task(name="t.twice", cron="* * * * *")(_handler)  # the same declaration again (a re-import): fine

    def other(ctx, inp):  # type: ignore[no-untyped-def]
        return None

    with pytest.raises(JobsError, match="two tasks are named 't.twice'"):
        task(name="t.twice", cron="0 * * * *")(other)


def test_parse_cron_normalises_spaces() -> None:
    assert parse_cron("  0   2 * * *", "UTC", task="t").expr == "0 2 * * *"
    assert Cron("0 2 * * *").next_after(_utc(2026, 1, 1, 3)) == _utc(2026, 1, 2, 2) - timedelta(0)
