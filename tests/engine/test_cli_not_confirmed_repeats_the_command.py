"""A bulk action refused for want of a confirmation (no terminal, no --yes) names as its fix the
command the operator typed, every option kept, with --yes: the plain-text refusal and the --json
one say the same command (the JSON one with --json), and that command, run, does the action."""

from __future__ import annotations

import json
import shlex

import pytest

from engine.drivers.postgres.dsn import shown_dsn
from engine.types import JobState
from tests.engine.test_cli_introspect import cli, seed


def _fix(stderr: str) -> str:
    [line] = [ln for ln in stderr.splitlines() if ln.strip().startswith("fix: ")]
    return line.strip().removeprefix("fix: ")


@pytest.mark.parametrize("verb", ["retry", "cancel", "discard"])
def test_a_bulk_refused_without_yes_says_the_whole_command_in_text_as_in_json(pg_dsn: str, verb: str) -> None:
    state = JobState.READY if verb == "cancel" else JobState.DEAD
    seed(pg_dsn, state, state, tenant="acme")
    typed = [verb, "--all", "-f", "queue=default", "--tenant", "acme", "--rate", "50"]
    typed += ["--note", "smtp down", "--actor", "bob", "--dsn", pg_dsn]
    text = cli(*typed, input="")  # nothing on stdin: no answer is a no
    assert text.exit_code == 5 and "not confirmed; nothing changed" in text.stderr
    fix = _fix(text.stderr)
    dsn = shlex.quote(shown_dsn(pg_dsn))
    assert fix == (
        f"jobsctl {verb} --all -f queue=default --tenant acme --rate 50 --note 'smtp down' --actor bob "
        f"--dsn {dsn} --yes"
    )
    as_json = cli(*typed, "--json")
    assert as_json.exit_code == 5 and json.loads(as_json.stderr)["error"]["fix"] == f"{fix} --json"
    words = shlex.split(fix)[1:]  # the fix as a shell reads it, run: it does what was asked
    words[words.index("--dsn") + 1] = pg_dsn
    done = cli(*words)
    assert done.exit_code == 0 and f"{verb}: 2 changed, 0 skipped" in done.stdout
