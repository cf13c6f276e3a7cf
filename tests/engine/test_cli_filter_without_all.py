"""An action given filter words but no id and no --all: the words act only under --all, and the
refusal's fix is that same action with --all and every word, quoted as typed."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from engine.cli import app


@pytest.mark.parametrize("verb", ["retry", "cancel", "discard"])
def test_filter_words_without_all_are_answered_with_the_action_over_them_under_all(verb: str) -> None:
    r = CliRunner().invoke(app, [verb, "-f", "name=x", "-f", "queue=a b", "--dsn", "memory://", "--json"])
    assert r.exit_code != 0
    err = json.loads(r.stderr)["error"]
    assert err["code"] == "X_INVALID_ARGUMENT"
    assert "takes --all" in err["cause"]
    assert err["fix"] == f"jobsctl {verb} --all --filter name=x --filter 'queue=a b'"


@pytest.mark.parametrize("verb", ["retry", "cancel", "discard"])
def test_no_id_and_no_filter_is_answered_with_the_action_on_an_id(verb: str) -> None:
    r = CliRunner().invoke(app, [verb, "--dsn", "memory://", "--json"])
    assert json.loads(r.stderr)["error"]["fix"] == f"jobsctl {verb} JOB_ID"
