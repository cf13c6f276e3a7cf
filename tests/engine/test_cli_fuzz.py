"""Bad input to every `jobsctl` command is a coded error, never a traceback, and never silently
dropped: each invocation below is refused with code, cause and a one-line fix on stderr (a JSON
object there with --json) and the exit code its kind of error has (1 an error, 2 a DSN that
cannot be used, 3 a job not found). All run in-process on memory:// or an address nothing
answers on: each is refused before a database would be needed."""

from __future__ import annotations

import json
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from engine.cli import app

MEM = ["--dsn", "memory://"]
NOWHERE = ["--dsn", "postgresql://nobody@127.0.0.1:1/nowhere"]
WORKER_APP = "tests.engine.test_worker_app"
BACKFILL_APP = ["--app", "tests.engine.backfill_app"]
ENQUEUE = ["enqueue", "w.pg_work", "--app", WORKER_APP, *MEM]
ID = "01a25125-07db-7009-89b4-e1d028cd92fe"
DEEP = "[" * 100_000 + "]" * 100_000  # JSON nested past what the parser can read
LONG = "x" * 10_000
EXIT_OF = {"X_DSN_INVALID": 2, "X_NOT_FOUND": 3, "X_UNKNOWN_JOB": 3}
# The backfill app reads its own database's address from here; nothing answers on it.
BACKFILL_ENV = {"BACKFILL_APP_DSN": NOWHERE[1]}


def case(args: list[str], code: str, said: str = "", *, id: str) -> Any:  # noqa: A002
    return pytest.param(args, code, said, id=id)


REFUSED = [
    # Text that could never reach the server, in the DSN: its encoding raised.
    case(["queues", "--dsn", "postgresql://a\udcffb@h/db"], "X_DSN_INVALID", "lone surrogate", id="dsn-lone-surrogate"),
    case(["queues", "--dsn", "postgresql://a\x00b@h/db"], "X_DSN_INVALID", "NUL", id="dsn-nul"),
    # Filters.
    case(["ls", *MEM, "-f", "since=99999999999d"], "X_INVALID_ARGUMENT", "before the year 1", id="since-overflows"),
    case(["ls", *MEM, "-f", "queue=a", "-f", "queue=b"], "X_INVALID_ARGUMENT", "given twice", id="filter-key-twice"),
    case(["ls", *MEM, "-f", "code=X_A", "-f", "error_code=X_B"], "X_INVALID_ARGUMENT", "given twice", id="code-twice"),
    case(["ls", *MEM, "-f", f"input.n={DEEP}"], "X_INVALID_ARGUMENT", "nested too deep", id="filter-json-too-deep"),
    case(["dead", *MEM, "-f", "state=ready"], "X_INVALID_ARGUMENT", "state=ready", id="dead-with-live-state"),
    case(["ls", *MEM, "-f", "foo"], "X_INVALID_ARGUMENT", "not key=value", id="filter-without-equals"),
    case(["ls", *MEM, "-f", "bogus=1"], "X_INVALID_ARGUMENT", "unknown filter key", id="filter-unknown-key"),
    case(["ls", *MEM, "-f", "state=nope"], "X_UNKNOWN_STATE", id="filter-unknown-state"),
    case(["ls", *MEM, "-f", "since=10x"], "X_INVALID_ARGUMENT", id="filter-bad-duration"),
    case(["ls", *MEM, "--limit", "0"], "X_INVALID_ARGUMENT", id="ls-limit-zero"),
    case(["ls", *MEM, "--cursor", "garbage"], "X_INVALID_ARGUMENT", id="ls-bad-cursor"),
    case(["queues", *MEM, "--budget", "nan"], "X_INVALID_ARGUMENT", id="budget-nan"),
    # Ids.
    case(["show", *MEM, "nothex"], "X_MALFORMED_ID", id="show-not-an-id"),
    case(["show", *MEM, ""], "X_MALFORMED_ID", id="show-empty-id"),
    case(["show", *MEM, "abcdef"], "X_NOT_FOUND", id="show-short-id-matching-nothing"),
    case(["children", *MEM, "a\x00b"], "X_MALFORMED_ID", id="children-nul-id"),
    case(["wait", *MEM, "abcdef", "--timeout", "-1s"], "X_INVALID_ARGUMENT", id="wait-negative-timeout"),
    # JSON arguments.
    case([*ENQUEUE, "--input", "{"], "X_INVALID_ARGUMENT", "not JSON", id="input-malformed"),
    case([*ENQUEUE, "--input", DEEP], "X_INVALID_ARGUMENT", "nested too deep", id="input-too-deep"),
    case(["event", "e", *MEM, "--payload", DEEP], "X_INVALID_ARGUMENT", "nested too deep", id="payload-too-deep"),
    case(["event", "e", *MEM, "--payload", "[1,"], "X_INVALID_ARGUMENT", "not JSON", id="payload-malformed"),
    case(["event", "e", *MEM, "--payload", "[1]"], "X_INVALID_ARGUMENT", "JSON object", id="payload-a-list"),
    case(["event", "e", *MEM, "--payload", "null"], "X_INVALID_ARGUMENT", "not a JSON object", id="payload-null"),
    case(["event", " ", *MEM], "X_INVALID_ARGUMENT", id="event-blank-name"),
    # Durations and options given empty, which were read as not given.
    case([*ENQUEUE, "--input", '{"n": 1}', "--delay", ""], "X_INVALID_ARGUMENT", "--delay ''", id="delay-empty"),
    case([*ENQUEUE, "--delay", "10x"], "X_INVALID_ARGUMENT", "--delay '10x'", id="delay-malformed"),
    case(["retry", ID, *MEM, "--from-step", ""], "X_INVALID_ARGUMENT", "step=''", id="from-step-empty"),
    case(["outbox", *MEM, "--why", ""], "X_MALFORMED_ID", id="outbox-why-empty"),
    case(["worker", WORKER_APP, *NOWHERE, "--queues", ""], "X_INVALID_ARGUMENT", "names no queue", id="queues-empty"),
    case(["worker", WORKER_APP, *NOWHERE, "--queues", ","], "X_INVALID_ARGUMENT", "names no queue", id="queues-comma"),
    # Options the command would drop.
    case(["outbox", *MEM, "--why", ID, "--limit", "5"], "X_INVALID_ARGUMENT", "--limit", id="outbox-why-with-limit"),
    case([*ENQUEUE, "--input", '{"n": 1}', "--wait"], "X_INVALID_ARGUMENT", "never settle", id="wait-on-memory"),
    case(
        ["backfill", *BACKFILL_APP, *MEM, "--history"], "X_INVALID_ARGUMENT", "no NAME", id="backfill-history-no-name"
    ),
    case(["backfill", *BACKFILL_APP, *MEM, "--write"], "X_INVALID_ARGUMENT", "no NAME", id="backfill-write-no-name"),
    case(["backfill", *BACKFILL_APP, *MEM, "--cancel"], "X_INVALID_ARGUMENT", "no NAME", id="backfill-cancel-no-name"),
    case(["retry", ID, *MEM, "--rate", "5"], "X_INVALID_ARGUMENT", "--rate", id="rate-with-an-id"),
    # Numbers out of range, refused before the dry run, the question or the database.
    case(["retry", "--all", "-f", "queue=q", *MEM, "--rate", "nan"], "X_INVALID_ARGUMENT", "--rate nan", id="rate-nan"),
    case(["cancel", "--all", "-f", "queue=q", *MEM, "--rate", "-1"], "X_INVALID_ARGUMENT", "--rate -1", id="rate-neg"),
    case(["discard", "--all", "-f", "queue=q", *MEM, "--rate", "0"], "X_INVALID_ARGUMENT", "--rate 0", id="rate-zero"),
    case(["outbox", *MEM, "--limit", "99999999999999999999"], "X_INVALID_ARGUMENT", "1 to 500", id="outbox-limit-huge"),
    case(["--statement-timeout", "1e7", "queues", *NOWHERE], "X_INVALID_ARGUMENT", "ceiling", id="stmt-timeout-huge"),
    case(["--connect-timeout", "0", "queues", *NOWHERE], "X_INVALID_ARGUMENT", id="connect-timeout-zero"),
    case(["relay", *NOWHERE, "--lease-ms", "0"], "X_INVALID_ARGUMENT", "--lease-ms 0", id="relay-lease-zero"),
    case(["relay", *NOWHERE, "--metrics-port", "99999"], "X_INVALID_ARGUMENT", "past 65535", id="metrics-port-huge"),
    case(
        ["relay", *NOWHERE, "--metrics-port", "9464", "--metrics-host", ""],
        "X_INVALID_ARGUMENT",
        id="metrics-host-empty",
    ),
    case(
        ["migrate", *NOWHERE, "--sql", "--since", "999999"], "X_INVALID_ARGUMENT", "past the last", id="since-past-last"
    ),
    case(["migrate", *NOWHERE, "--sql", "--since", "3", "--until", "999"], "X_INVALID_ARGUMENT", id="until-past-last"),
    # Names.
    case(["pause", LONG, *MEM, "--create"], "X_INVALID_ARGUMENT", "at most 200", id="pause-queue-too-long"),
    case(["pause", " ", *MEM], "X_INVALID_ARGUMENT", id="pause-blank-queue"),
    case([*ENQUEUE[:1], "nope", *ENQUEUE[2:]], "X_UNKNOWN_JOB", id="enqueue-unknown-job"),
    case(["schedule", "trigger", "nope", *MEM], "X_UNKNOWN_TASK", id="schedule-unknown-task"),
    case(["workers", "drain", "", *MEM], "X_INVALID_ARGUMENT", id="drain-empty-worker"),
    case(["backfill", "nope", *BACKFILL_APP, *MEM], "X_BACKFILL_UNKNOWN", id="backfill-unknown"),
    case(["backfill", *BACKFILL_APP, *MEM, "--env", "a\x00"], "X_INVALID_ARGUMENT", "NUL", id="backfill-env-nul"),
    case(["describe", "--app", "no.such.module"], "X_WORKER_TARGET", id="describe-unknown-module"),
    # The app's own connection failing: its error, as the gate a start meets.
    case(["backfill", "accounts_email_lower", "--write", *BACKFILL_APP, *MEM], "X_HANDLER_FAILED", id="app-conn-fails"),
]


def _takes_json(args: list[str]) -> bool:
    """Whether the command ``args`` run takes --json (describe prints JSON as it is, and has none)."""
    cmd: Any = typer.main.get_command(app)
    for word in args:
        sub = getattr(cmd, "commands", {}).get(word)
        if sub is None and word.startswith("-"):
            continue
        if sub is None:
            break
        cmd = sub
    return any("--json" in p.opts for p in cmd.params)


def _invoke(args: list[str]) -> Any:
    return CliRunner().invoke(app, args, env=BACKFILL_ENV)


def _no_traceback(r: Any) -> None:
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "Traceback" not in r.stdout + r.stderr


@pytest.mark.parametrize(("args", "code", "said"), REFUSED)
def test_bad_input_is_a_coded_error_with_a_fix_never_a_traceback(args: list[str], code: str, said: str) -> None:
    r = _invoke(args)
    _no_traceback(r)
    assert r.exit_code == EXIT_OF.get(code, 1), (r.exit_code, r.stderr)
    assert r.stderr.startswith(f"error {code}: "), r.stderr
    assert "\n  fix: " in r.stderr and said in r.stderr.split("\n  fix: ")[0], r.stderr


# `migrate --sql` prints a script, which has no JSON form: with --json that is its refusal.
WITH_JSON = [p for p in REFUSED if _takes_json(p.values[0]) and "--sql" not in p.values[0]]


@pytest.mark.parametrize(("args", "code", "said"), WITH_JSON)
def test_bad_input_with_json_is_a_json_error_on_stderr(args: list[str], code: str, said: str) -> None:
    r = _invoke([*args, "--json"])
    _no_traceback(r)
    assert r.exit_code == EXIT_OF.get(code, 1), (r.exit_code, r.stderr)
    err = json.loads(r.stderr.strip().splitlines()[-1])["error"]
    assert err["code"] == code and said in err["cause"] and err["fix"], err


def test_an_options_fix_is_a_command_to_type() -> None:
    """A refusal that the engine's Python API words (RelayConfig(lease_ms=...), migration_sql(...))
    is given to the CLI's user as the command with the flag."""
    for args, fix in (
        (["relay", *NOWHERE, "--lease-ms", "0"], "jobsctl relay --lease-ms 30000"),
        (["migrate", *NOWHERE, "--sql", "--since", "3", "--until", "999"], "jobsctl migrate --sql --since 3 --until"),
    ):
        r = _invoke(args)
        assert f"  fix: {fix}" in r.stderr, r.stderr


def test_backfill_status_shows_an_apps_failing_connection_as_its_gate() -> None:
    """The status lists every backfill: one whose app connection fails is shown with that error as
    the gate a start would meet, not ended with a traceback."""
    r = _invoke(["backfill", *BACKFILL_APP, *MEM, "--json"])
    _no_traceback(r)
    assert r.exit_code == 0, r.stderr
    gates = {v["name"]: v["gate"] for v in json.loads(r.stdout)}
    assert gates["accounts_email_lower"]["code"] == "X_HANDLER_FAILED"
    assert "OperationalError" in gates["accounts_email_lower"]["cause"]


def test_a_filter_key_repeated_with_the_same_value_is_taken() -> None:
    """`--tenant t` on a bulk action is a `tenant=t` filter: given again as -f tenant=t it agrees."""
    r = _invoke(["retry", "--all", "--tenant", "t", "-f", "tenant=t", *MEM])
    _no_traceback(r)
    assert r.exit_code == 5 and "matching tenant=t" in r.stdout, (r.exit_code, r.stderr)
