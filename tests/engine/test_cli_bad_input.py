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


EVIL = "x\x1b[31mred\x1b]0;title\x07\r\u202eevil[bold]B[/bold]\x9b2J"
DANGEROUS = ("\x1b", "\x07", "\r", "\u202e", "\x9b")


def _seed_evil(dsn: str) -> tuple[str, str]:
    """A dead job, a running one with a step, a worker and a pause, whose every text field
    carries terminal escape sequences, a bidi override and rich markup."""
    from engine.clock import SystemClock
    from engine.drivers.postgres import PostgresDriver
    from engine.ids import IdFactory
    from engine.testing import Factory
    from engine.types import JobState

    async def go() -> tuple[str, str]:
        f = Factory(PostgresDriver(dsn), IdFactory(SystemClock()), SystemClock())
        try:
            await f.open()
            dead = await f.job(name=f"n{EVIL}", queue=f"q{EVIL}", tenant=f"t{EVIL}", key=f"k{EVIL}", input={"v": EVIL})
            claim = await f.claim(dead.id, worker=f"w{EVIL}")
            await f.step(claim, f"s{EVIL}", 1, status="failed", error=f"E{EVIL}")
            await f.nack(claim, "dead", error=f"X_EVIL: {EVIL}", error_code="X_EVIL", stop_reason="terminal")
            other = await f.job(JobState.READY, name=f"n{EVIL}", queue=f"q{EVIL}")
            await f.cancel(other.id, note=f"note {EVIL}")
            await f.worker(f"w{EVIL}", host=f"h{EVIL}", pid=1, queues=(f"q{EVIL}",), concurrency=2)
            await f.pause(f"p{EVIL}", note=f"pause {EVIL}")
            return dead.id, other.id
        finally:
            await f.close()

    import asyncio

    return asyncio.run(go())


def test_every_field_the_cli_prints_shows_control_characters_escaped_and_markup_literal(pg_dsn: str) -> None:
    dead, cancelled = _seed_evil(pg_dsn)
    runs = {
        "ls": cli(pg_dsn, "ls"),
        "show dead": cli(pg_dsn, "show", dead),
        "show cancelled": cli(pg_dsn, "show", cancelled),
        "dead": cli(pg_dsn, "dead"),
        "queues": cli(pg_dsn, "queues"),
        "workers": cli(pg_dsn, "workers"),
        "why": cli(pg_dsn, "why", dead),
        "not found": cli(pg_dsn, "why", f"q{EVIL}x"),
    }
    for what, r in runs.items():
        out = r.stdout + r.stderr
        assert not any(ch in out for ch in DANGEROUS), (what, out)
        assert "Traceback" not in out, (what, out)
    shown = runs["show dead"].stdout
    assert "\\x1b[31mred\\x1b]0;title\\x07\\r\\u202eevil[bold]B[/bold]\\x9b2J" in shown  # escaped, markup literal
    assert f"last error: X_EVIL: {EVIL[:3]}".replace("\x1b", "\\x1b") in shown
