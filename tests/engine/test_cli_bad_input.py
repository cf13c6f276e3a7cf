"""Bad input to the `jobs` CLI answers with the engine's error (code, cause, fix; exit 1), never a
traceback, and writes nothing: text PostgreSQL cannot store in --input, --payload, --tenant,
--note and --filter, against the real server."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from engine.cli import app
from tests.engine import test_worker_app as worker_app

SURROGATE = '"a\\ud800b"'  # JSON text whose string holds a lone surrogate
NUL = '"a\\u0000b"'


def cli(dsn: str, *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, [*args, "--dsn", dsn])


def refused(result, code: str) -> None:  # type: ignore[no-untyped-def]
    err = result.stderr
    assert result.exit_code == 1, (result.exit_code, err, result.exception)
    assert f"error {code}:" in err and "  fix: " in err and "Traceback" not in err


@pytest.mark.parametrize("text", [SURROGATE, NUL], ids=["surrogate", "nul"])
def test_unstorable_text_in_the_clis_json_arguments_is_the_engines_error(pg_dsn: str, text: str) -> None:
    enq = cli(pg_dsn, "enqueue", "w.pg_work", "--app", worker_app.__name__, "--input", f'{{"n": {text}}}')
    refused(enq, "X_INPUT_NOT_JSON")
    refused(cli(pg_dsn, "event", "evt", "--payload", f'{{"v": {text}}}'), "X_INPUT_NOT_JSON")
    refused(cli(pg_dsn, "ls", "-f", f"input.n={text}"), "X_INVALID_ARGUMENT")
    listed = cli(pg_dsn, "ls", "--json")
    assert listed.exit_code == 0 and '"items": []' in listed.stdout  # nothing was written


def test_unstorable_text_in_the_clis_text_arguments_is_the_engines_error(pg_dsn: str) -> None:
    bad = "a\udcffb"  # what Python makes of an argv byte that is not UTF-8
    enq = cli(pg_dsn, "enqueue", "w.pg_work", "--app", worker_app.__name__, "--input", '{"n": 1}', "--tenant", bad)
    refused(enq, "X_INVALID_ARGUMENT")
    refused(cli(pg_dsn, "event", f"evt{bad}"), "X_INVALID_ARGUMENT")
    refused(cli(pg_dsn, "ls", "-f", f"tenant={bad}"), "X_INVALID_ARGUMENT")
    refused(cli(pg_dsn, "ls", "-f", f"search={bad}"), "X_INVALID_ARGUMENT")
    refused(cli(pg_dsn, "pause", f"q{bad}", "--create"), "X_INVALID_ARGUMENT")
