"""`jobsctl --read-only` and $JOBS_READ_ONLY=1 on a real database: no command that writes changes a
row of it, a bulk's dry run still reads and prints what it would do before its change is refused
(and the fix, run, does it), and the reads answer as they do without the switch."""

from __future__ import annotations

import json
import shlex
from typing import Any

import psycopg
import pytest

from engine.cli import read_only as ro
from engine.drivers.postgres.dsn import shown_dsn
from engine.types import JobState
from tests.engine import backfill_app
from tests.engine.test_cli_introspect import seed
from tests.engine.test_jobsctl_read_only import WRITES, jobsctl


@pytest.fixture(autouse=True)
def _app_database(pg_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ro.READ_ONLY_ENV, raising=False)
    monkeypatch.delenv("JOBS_ENV", raising=False)
    monkeypatch.setenv("BACKFILL_APP_DSN", pg_dsn)  # the backfills' own table lives here too
    backfill_app.create_accounts(pg_dsn, 10)


def _rows(dsn: str) -> dict[str, list[str]]:
    """Every row of every table of the database, as text: what "nothing changed" compares."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        tables = conn.execute(
            "select format('%I.%I', table_schema, table_name) from information_schema.tables "
            "where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')"
        ).fetchall()
        return {t: sorted(r for (r,) in conn.execute(f"select r::text from {t} r").fetchall()) for (t,) in tables}


def _switched(args: list[str], how: str) -> Any:
    if how == "flag":
        return jobsctl("--read-only", *args)
    return jobsctl(*args, env={ro.READ_ONLY_ENV: "1"})


def test_no_writing_command_changes_a_row_of_the_database_under_the_switch(pg_dsn: str) -> None:
    dead, ready = seed(pg_dsn, JobState.DEAD, JobState.READY)
    before = _rows(pg_dsn)
    assert any(rows for t, rows in before.items() if t.startswith("jobs."))
    ids = {"01a25125-07db-7009-89b4-e1d028cd92fe": None}
    forms = [[dead.id if w in ids else w for w in args] for _, args in WRITES]
    forms = [[ready.id if f[0] == "cancel" and w == dead.id else w for w in f] for f in forms]
    forms += [  # the bulks and --children: their dry run reads, then the change is refused
        ["retry", "--all", "-f", "state=dead", "--yes"],
        ["retry", "--all", "--children", "-f", "state=dead", "--yes"],
        ["discard", "--all", "-f", "state=dead", "--yes"],
        ["cancel", "--all", "-f", "state=ready", "--yes"],
        ["retry", dead.id, "--children", "--yes"],
        ["cancel", ready.id, "--children", "--yes"],
    ]
    for how in ("flag", "variable"):
        for args in forms:
            r = _switched([*args, "--dsn", pg_dsn], how)
            assert r.exit_code == 1 and "error X_READ_ONLY: read-only (" in r.stderr, (args, r.output)
    assert _rows(pg_dsn) == before


def test_a_bulks_dry_run_is_printed_and_its_change_refused_instead_of_asked(pg_dsn: str) -> None:
    seed(pg_dsn, JobState.DEAD, JobState.DEAD)
    typed = ["retry", "--all", "-f", "state=dead", "--note", "INC-7", "--dsn", pg_dsn]
    r = jobsctl("--read-only", *typed, input="y\n")  # no question is asked: the answer is never read
    assert r.exit_code == 1, r.output
    assert "dry run: retry 2 jobs matching state=dead" in r.stdout and "?" not in r.stdout
    [cause, fix] = [ln for ln in r.stderr.splitlines() if ln.startswith(("error ", "  fix: "))]
    assert cause == (
        "error X_READ_ONLY: read-only (--read-only was given): `jobsctl retry` would retry every job its filter "
        "matches; its dry run is all it did"
    )
    dsn = shlex.quote(shown_dsn(pg_dsn))
    assert fix == f"  fix: jobsctl retry --all -f state=dead --note INC-7 --dsn {dsn}"
    as_json = jobsctl(*typed, "--json", env={ro.READ_ONLY_ENV: "1"})
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout) == {"plan": json.loads(as_json.stdout)["plan"], "result": None}
    assert json.loads(as_json.stdout)["plan"]["matched"] == 2
    err = json.loads(as_json.stderr)["error"]
    assert err["code"] == "X_READ_ONLY" and err["fix"].startswith("JOBS_READ_ONLY=0 jobsctl retry --all")
    still = jobsctl("ls", "-f", "state=dead", "--dsn", pg_dsn, "--json")
    assert len(json.loads(still.stdout)["items"]) == 2
    words = shlex.split(fix.removeprefix("  fix: "))[1:]  # the fix, run with --yes: it does the retry
    words[words.index("--dsn") + 1] = pg_dsn
    done = jobsctl(*words, "--yes")
    assert done.exit_code == 0 and "retry: 2 changed, 0 skipped" in done.stdout, done.output


@pytest.mark.parametrize("verb, state", [("cancel", JobState.READY), ("retry", JobState.DEAD)])
def test_a_children_dry_run_is_printed_and_its_change_refused(pg_dsn: str, verb: str, state: JobState) -> None:
    [job] = seed(pg_dsn, state)
    r = jobsctl(verb, job.id, "--children", "--dsn", pg_dsn, env={ro.READ_ONLY_ENV: "yes"})
    assert r.exit_code == 1, r.output
    assert f"dry run: {verb} {job.id} and the 0 " in r.stdout
    assert f"`jobsctl {verb}` would {verb} job {job.id} and the jobs below it; its dry run is all it did" in r.stderr
    shown = jobsctl("show", job.id, "--dsn", pg_dsn, "--json")
    assert json.loads(shown.stdout)["job"]["state"] == state.value


def test_reads_answer_under_the_switch_as_without_it(pg_dsn: str) -> None:
    dead, _ = seed(pg_dsn, JobState.DEAD, JobState.READY)
    backfills = ["--app", "tests.engine.backfill_app"]
    reads = [
        ["queues"],
        ["ls", "-f", "state=dead"],
        ["show", dead.id],
        ["dead"],
        ["why", dead.id],
        ["children", dead.id],
        ["wait", dead.id, "--timeout", "1s"],
        ["workers"],
        ["schedule"],
        ["outbox"],
        ["migrate", "--status"],
        ["migrate", "--sql"],
        ["backfill", "--status", *backfills],
        ["backfill", "--pending", *backfills],
        ["backfill", "accounts_email_lower", "--history", *backfills],
    ]
    for args in reads:
        plain = jobsctl(*args, "--dsn", pg_dsn)
        assert plain.exit_code in (0, 4, 6), (args, plain.output)  # 4: a backfill pending; 6: the job waited is dead
        for how in ("flag", "variable"):
            r = _switched([*args, "--dsn", pg_dsn], how)
            assert r.exit_code == plain.exit_code and "X_READ_ONLY" not in r.stderr, (args, how, r.output)
            assert r.stdout.splitlines()[:1] == plain.stdout.splitlines()[:1], (args, how)
