"""A tenant a command cannot take (empty, spaces around it) is refused with the command as typed, its
--tenant a valid one, as the fix, not the Python API's keyword; run as printed, the fix gets past
the tenant check."""

from __future__ import annotations

import shlex

import pytest
from typer.testing import CliRunner

from engine.cli import app
from engine.errors import X_INVALID_ARGUMENT

ID = "01a25125-07db-7009-89b4-e1d028cd92fe"


@pytest.mark.parametrize(
    "words",
    [
        ["show", ID, "--tenant", " acme"],
        ["retry", ID, "--tenant="],
        ["cancel", ID, "--tenant", "acme "],
        ["audit", "--tenant", ""],
    ],
)
def test_a_tenant_the_command_cannot_take_names_the_command_typed_as_its_fix(words: list[str]) -> None:
    r = CliRunner().invoke(app, [*words, "--dsn", "memory://"])
    assert r.exit_code == 1, r.output
    assert f"error {X_INVALID_ARGUMENT}: tenant=" in r.output
    fix = next(line for line in r.output.splitlines() if line.strip().startswith("fix:")).split("fix:", 1)[1].strip()
    typed = shlex.split(fix)
    assert typed[0] == "jobsctl" and typed[1] == words[0]
    again = CliRunner().invoke(app, typed[1:])
    assert "tenant=" not in again.output, again.output  # the tenant passes now; what follows is the command's own
