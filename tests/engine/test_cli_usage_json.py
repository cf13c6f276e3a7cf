"""A usage error (an unknown option or command, a missing argument, a value its type or range
refuses) of a `jobsctl` invocation given --json is the JSON error every other refusal under --json
is: one object on stderr with code, cause (click's words) and a fix naming the command's help, and
click's exit code for a usage error (2). Without --json it stays click's text. All refused while
parsing: no database is reached."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from engine.cli import app

USAGE = [
    pytest.param(["ls", "--json", "--limit", "abc"], "'abc' is not a valid int", "jobsctl ls", id="bad-int"),
    pytest.param(["ls", "--bogus", "--json"], "No such option: --bogus", "jobsctl ls", id="unknown-option"),
    pytest.param(["ls", "--json", "--state", "dead"], "-f state=dead", "jobsctl ls", id="filter-typed-as-option"),
    pytest.param(["show", "--json"], "Missing argument", "jobsctl show", id="missing-argument"),
    pytest.param(
        ["workers", "drain", "--json"], "Missing argument", "jobsctl workers drain", id="nested-missing-argument"
    ),
    pytest.param(["workers", "--json", "--bogus"], "No such option: --bogus", "jobsctl workers", id="group-option"),
    pytest.param(["migrate", "--json", "--status", "--since", "-1"], "--since", "jobsctl migrate", id="out-of-range"),
    pytest.param(["outbox", "--json", "--limit", "many"], "'many' is not a valid int", "jobsctl outbox", id="outbox"),
    pytest.param(["bogus", "--json"], "No such command 'bogus'", "jobsctl", id="unknown-command"),
    pytest.param(["--connect-timeout", "x", "ls", "--json"], "--connect-timeout", "jobsctl", id="root-option"),
]


@pytest.mark.parametrize(("args", "said", "command"), USAGE)
def test_a_usage_error_under_json_is_a_json_error_with_clicks_exit_code(
    args: list[str], said: str, command: str
) -> None:
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 2, (r.exit_code, r.stderr, r.exception)
    assert r.stdout == ""
    (line,) = r.stderr.strip().splitlines()  # one JSON object, no usage text around it
    err = json.loads(line)["error"]
    assert err["code"] == "X_INVALID_ARGUMENT" and said in err["cause"], err
    assert err["fix"] == f"{command} --help" and err["docs"].endswith("x_invalid_argument")


def test_a_usage_error_without_json_stays_clicks_text() -> None:
    r = CliRunner().invoke(app, ["ls", "--limit", "abc"], env={"COLUMNS": "200"})
    assert r.exit_code == 2
    assert "Usage: jobsctl ls" in r.stderr and "'abc' is not a valid int" in r.stderr
    assert '"error"' not in r.stderr


def test_json_after_the_end_of_options_does_not_ask_for_json() -> None:
    """After `--` every word is a value: a `--json` there is not the flag."""
    r = CliRunner().invoke(app, ["show", "--bogus", "--", "--json"], env={"COLUMNS": "200"})
    assert r.exit_code == 2 and "No such option: --bogus" in r.stderr and '"error"' not in r.stderr


def test_a_root_option_refused_under_json_is_a_json_error() -> None:
    """The root's own refusals (--connect-timeout below libpq's floor) follow the subcommand's --json."""
    r = CliRunner().invoke(app, ["--connect-timeout", "1", "ls", "--json", "--dsn", "memory://"])
    assert r.exit_code == 1, (r.exit_code, r.stderr)
    err = json.loads(r.stderr.strip())["error"]
    assert err["code"] == "X_INVALID_ARGUMENT" and "--connect-timeout 1" in err["cause"]
