"""`jobsctl audit`: the audit log newest first, one line an entry (id, when in UTC and how long ago,
actor, action, target, note and a short detail) within 80 columns, its filters, a full page ending
with the command that reads the next one, --json with every field, and every bad option refused
with code, cause and fix before the database is reached. `jobsctl resume --note` reaches the log.

Each invocation runs in-process on one MemoryDriver shared by every command of a test (engine.api's
connect answers an Engine on it, on a FakeClock), as a deployment's database is shared."""

from __future__ import annotations

import asyncio
import json
import shlex
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from typer.testing import CliRunner

import engine.api
from engine.api import Engine
from engine.cli import app
from engine.clock import FakeClock
from engine.drivers.memory import MemoryDriver
from engine.records import AuditEntry

NOWHERE = "postgresql://nobody:s3cret@127.0.0.1:1/nowhere"  # a command that connected would say X_DB_UNREACHABLE
JOB = "01a25125-07db-7009-89b4-e1d028cd92fe"


class Fleet:
    """One database every command of a test reaches, on a clock the test moves."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.driver, self.clock = MemoryDriver(), FakeClock()
        monkeypatch.setattr(engine.api, "connect", lambda dsn, **kw: Engine(self.driver, clock=self.clock))
        monkeypatch.delenv("JOBS_READ_ONLY", raising=False)

    def jobsctl(self, *args: str, columns: int | None = None) -> Any:
        env = {"COLUMNS": str(columns)} if columns else None
        return CliRunner().invoke(app, [*args, "--dsn", "memory://"], env=env)

    def act(self, *args: str) -> None:
        r = self.jobsctl(*args)
        assert r.exit_code == 0, r.output

    def add(self, entry: AuditEntry) -> None:
        asyncio.run(self.driver.audit_add(entry=entry))


@pytest.fixture
def fleet(monkeypatch: pytest.MonkeyPatch) -> Fleet:
    f = Fleet(monkeypatch)
    f.act("pause", "billing", "--create", "--note", "INC-9: the gateway answers 503", "--actor", "ann")  # id 1
    f.clock.advance(3600)
    f.act("pause", "emails", "--create", "--actor", "bob")  # id 2
    f.clock.advance(600)
    f.act("resume", "billing", "--note", "INC-9: fixed", "--actor", "bob")  # id 3
    f.clock.advance(60)
    detail = {"name": "charge_card", "queue": "billing", "from": "dead"}
    f.add(AuditEntry(f.clock.now(), "carol", "job.retry", JOB, "acme", "INC-10", detail))  # id 4
    f.clock.advance(200)
    return f


def _json(r: Any) -> list[dict[str, Any]]:
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _error(r: Any) -> dict[str, str]:
    said = r.stderr.splitlines()
    assert said[0].startswith("error ") and said[1].startswith("  fix: "), r.output
    code, _, cause = said[0].removeprefix("error ").partition(": ")
    return {"code": code, "cause": cause, "fix": said[1].removeprefix("  fix: ")}


def test_the_log_is_listed_newest_first_one_line_an_entry_with_when_who_what_and_why(fleet: Fleet) -> None:
    r = fleet.jobsctl("audit", columns=200)
    assert r.exit_code == 0, r.output
    head, *rows = r.stdout.splitlines()
    assert head.split() == ["id", "when", "(UTC)", "ago", "actor", "action", "target", "note"]
    assert [row.split()[0] for row in rows] == ["4", "3", "2", "1"]
    retried, resumed, _, paused = rows
    # A job by its whole id, what --target takes; its name and state before as detail.
    assert retried.split()[1:6] == ["13:11:00", "3m20s", "carol", "job.retry", JOB]
    assert retried.endswith("INC-10 · charge_card, was dead, tenant acme")
    assert resumed.split()[1:6] == ["13:10:00", "4m20s", "bob", "queue.resume", "billing"]
    assert resumed.endswith("INC-9: fixed")
    assert paused.split()[1:6] == ["12:00:00", "1h14m", "ann", "queue.pause", "billing"]
    assert "older entries" not in r.stdout  # the page was not full


def test_at_80_columns_each_entry_stays_on_one_line_its_note_cut_with_an_ellipsis(fleet: Fleet) -> None:
    long_note = "INC-11: the ledger sync double-posted every refund of the day, so the whole queue is held"
    fleet.add(AuditEntry(fleet.clock.now(), "dave@oncall.example.com", "queue.pause", "ledger-sync", note=long_note))
    r = fleet.jobsctl("audit", columns=80)
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert len(lines) == 1 + 5 and all(len(line) <= 80 for line in lines), r.stdout
    assert lines[1].split()[:2] == ["5", "13:14:20"] and "queue.pause" in lines[1] and lines[1].endswith("…")
    # Too narrow for a job's whole id: its tail, a short id every command takes.
    assert " e1d028cd92fe " in lines[2] and JOB not in r.stdout
    wide = fleet.jobsctl("audit", columns=300).stdout.splitlines()
    assert wide[1].endswith(long_note) and "dave@oncall.example.com" in wide[1] and JOB in wide[2]


def test_each_filter_narrows_the_log(fleet: Fleet) -> None:
    def ids(*args: str) -> list[int]:
        return [e["id"] for e in _json(fleet.jobsctl("audit", "--json", *args))]

    assert ids() == [4, 3, 2, 1]
    assert ids("--target", "billing") == [3, 1]
    assert ids("--target", JOB) == [4]
    assert ids("--actor", "bob") == [3, 2]
    assert ids("--action", "queue.pause") == [2, 1]
    assert ids("--actor", "bob", "--action", "queue.pause") == [2]
    assert ids("--since", "10m") == [4, 3]  # back from the engine's clock
    assert ids("--since", "2026-01-01T13:00:00+00:00") == [4, 3, 2]
    assert ids("--since", "2026-01-01T14:00:00+01:00") == [4, 3, 2]  # the same instant in another zone
    assert ids("--tenant", "acme") == [4]  # a tenant reads only its own entries, not the fleet's
    assert ids("--before", "3") == [2, 1]
    r = fleet.jobsctl("audit", "--target", "nothing-here")
    assert r.exit_code == 0 and r.stdout == "no entry of the audit log matches\n"


def test_an_empty_log_says_so() -> None:
    r = CliRunner().invoke(app, ["audit", "--dsn", "memory://"])
    assert r.exit_code == 0 and r.stdout == "the audit log has no entry\n", r.output


def test_a_full_page_ends_with_the_command_that_reads_the_next_page_under_the_same_filters(fleet: Fleet) -> None:
    fleet.act("pause", "reports", "--create", "--actor", "bob")  # id 5
    r = fleet.jobsctl("audit", "--actor", "bob", "--since", "2h", "--limit", "2")
    assert r.exit_code == 0, r.output
    assert [line.split()[0] for line in r.stdout.splitlines()[1:3]] == ["5", "3"]
    said = r.stdout.splitlines()[-1]
    # A duration is said as the instant it reached back to: each page reads the same window.
    since = (fleet.clock.now() - timedelta(hours=2)).isoformat()
    command = f"jobsctl audit --before 3 --actor bob --since {since} --limit 2 --dsn memory://"
    assert said == f"older entries: {command}"
    fleet.clock.advance(3600)  # later on, the next page still reads the window of the first
    words = shlex.split(command)
    assert words[0] == "jobsctl"
    nxt = CliRunner().invoke(app, words[1:])
    assert nxt.exit_code == 0, nxt.output
    assert [line.split()[0] for line in nxt.stdout.splitlines()[1:]] == ["2"]  # the last page: not full, no command


def test_json_has_every_field_of_every_entry(fleet: Fleet) -> None:
    entries = _json(fleet.jobsctl("audit", "--json", "--limit", "2"))
    assert entries == [
        {
            "id": 4,
            "at": "2026-01-01T13:11:00+00:00",
            "actor": "carol",
            "action": "job.retry",
            "target": JOB,
            "tenant": "acme",
            "note": "INC-10",
            "detail": {"name": "charge_card", "queue": "billing", "from": "dead"},
        },
        {
            "id": 3,
            "at": "2026-01-01T13:10:00+00:00",
            "actor": "bob",
            "action": "queue.resume",
            "target": "billing",
            "tenant": None,
            "note": "INC-9: fixed",
            "detail": {},
        },
    ]
    assert datetime.fromisoformat(entries[0]["at"]) == datetime(2026, 1, 1, 13, 11, tzinfo=UTC)


def test_resume_keeps_its_note_in_the_audit_log(monkeypatch: pytest.MonkeyPatch) -> None:
    fleet = Fleet(monkeypatch)
    fleet.act("pause", "billing", "--create", "--actor", "ann")
    fleet.act("resume", "billing", "--note", "INC-9: fixed", "--actor", "bob")
    fleet.act("pause", "billing", "--create", "--actor", "ann")  # its pause row went with the resume
    fleet.act("resume", "billing", "--actor", "ann")  # no note: none kept
    kept = asyncio.run(
        fleet.driver.audit_list(
            limit=10,
            before=None,
            target=None,
            actor=None,
            action="queue.resume",
            since=None,
            scope=None,
            budget_ms=None,
        )
    )
    assert [(e.actor, e.note) for e in kept] == [("ann", None), ("bob", "INC-9: fixed")]


@pytest.mark.parametrize(
    "args, cause, fix",
    [
        (
            ["--since", "yesterday"],
            "--since 'yesterday' is neither a duration back from now (1h, 30m, 2d) nor an ISO 8601 time with its zone",
            "jobsctl audit --since 1h",
        ),
        (
            ["--since", "2026-01-01T09:00"],
            "--since '2026-01-01T09:00' without its zone is neither",
            "jobsctl audit --since 1h",
        ),
        (
            ["--since", "99999999999d"],
            "--since 99999999999d reaches back before the year 1",
            "jobsctl audit --since 30d",
        ),
        (["--limit", "0"], "limit=0 must be a whole number from 1 to 1000", "jobsctl audit --limit 50"),
        (["--limit", "1001"], "limit=1001 must be a whole number from 1 to 1000", "jobsctl audit --limit 50"),
        (["--before", "0"], "before=0 must be an entry's id", "jobsctl audit --before 120"),
        (
            ["--action", "queue.pase"],
            "the audit log has no action 'queue.pase'; did you mean 'queue.pause'",
            "jobsctl audit --action queue.pause",
        ),
        (
            ["--action", "job.retri"],
            "the audit log has no action 'job.retri'; did you mean 'job.retry'",
            "jobsctl audit --action job.retry",
        ),
        (
            ["--action", "zzz"],
            "the audit log has no action 'zzz' (one of: queue.pause, ",
            "jobsctl audit --action queue.pause",
        ),
        (["--target", " "], "target=' ' must be a non-empty str", "jobsctl audit --target NAME"),
        (["--budget", "0"], "--budget 0 must be a finite number of seconds > 0", "jobsctl audit --budget 2"),
    ],
)
def test_a_bad_option_is_refused_with_code_cause_and_fix_before_the_database(
    args: list[str], cause: str, fix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JOBS_READ_ONLY", raising=False)
    r = CliRunner().invoke(app, ["audit", *args, "--dsn", NOWHERE])
    assert r.exit_code == 1 and r.stdout == "", r.output
    err = _error(r)
    assert (err["code"], err["fix"]) == ("X_INVALID_ARGUMENT", fix)
    assert err["cause"].startswith(cause), err["cause"]
    as_json = CliRunner().invoke(app, ["audit", *args, "--json", "--dsn", NOWHERE])
    said = json.loads(as_json.stderr)["error"]
    assert as_json.exit_code == 1 and (said["code"], said["fix"]) == ("X_INVALID_ARGUMENT", fix)
    # The fix runs as printed.
    ran = CliRunner().invoke(app, [*shlex.split(fix)[1:], "--dsn", "memory://"])
    assert ran.exit_code == 0, ran.output


def test_a_word_where_a_number_goes_is_a_usage_error_naming_the_option() -> None:
    for flag in ("--limit", "--before"):
        r = CliRunner().invoke(app, ["audit", flag, "ten", "--dsn", NOWHERE])
        assert r.exit_code == 2 and f"Invalid value for '{flag}'" in r.stderr, r.output
