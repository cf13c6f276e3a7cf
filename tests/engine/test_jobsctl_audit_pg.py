"""`jobsctl audit` on PostgreSQL: the entries `jobsctl pause` and `jobsctl resume --note` write in
the transaction of their change are read back newest first with their notes and filters, their
times in UTC."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from typer.testing import CliRunner

from engine.cli import app


def jobsctl(*args: str, dsn: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(app, [*args, "--dsn", dsn], env=env)


def test_pause_and_resume_with_notes_are_read_back_newest_first_in_utc(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JOBS_READ_ONLY", raising=False)
    for args, code in (
        (["pause", "billing", "--create", "--note", "INC-9: gateway down", "--actor", "ann"], 0),
        (["resume", "billing", "--note", "INC-9: fixed", "--actor", "bob"], 0),
        (["resume", "billing", "--note", "again", "--actor", "bob"], 5),  # a no-op: no entry
    ):
        assert jobsctl(*args, dsn=pg_dsn).exit_code == code, args
    r = jobsctl("audit", "--json", "--since", "1h", dsn=pg_dsn)
    assert r.exit_code == 0, r.output
    entries = json.loads(r.stdout)
    said = [(e["action"], e["target"], e["actor"], e["note"], e["tenant"]) for e in entries]
    assert said == [
        ("queue.resume", "billing", "bob", "INC-9: fixed", None),
        ("queue.pause", "billing", "ann", "INC-9: gateway down", None),
    ]
    assert entries[0]["id"] > entries[1]["id"]
    for e in entries:
        at = datetime.fromisoformat(e["at"])
        assert at.utcoffset() == timedelta(0) and abs(datetime.now(UTC) - at) < timedelta(minutes=5)
    text = jobsctl("audit", "--action", "queue.resume", dsn=pg_dsn, env={"COLUMNS": "120"})
    assert text.exit_code == 0, text.output
    (row,) = text.stdout.splitlines()[1:]
    at, words = datetime.fromisoformat(entries[0]["at"]), row.split()
    assert f"{at:%H:%M}" in " ".join(words[1:3])  # HH:MM:SS today, else the date and minute
    bob = words.index("bob")
    assert words[bob : bob + 3] == ["bob", "queue.resume", "billing"] and row.endswith("INC-9: fixed")
    assert json.loads(jobsctl("audit", "--json", "--before", str(entries[1]["id"]), dsn=pg_dsn).stdout) == []
