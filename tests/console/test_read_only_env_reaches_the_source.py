"""`export JOBS_READ_ONLY=1` makes `jobs-console` read-only as it makes `jobsctl` read-only: the
variable is the default of the console's --read-only (the flag still turns it on when the variable
says off), and a word it does not take is refused before anything opens, as jobsctl refuses it:
both read it with the one parser, engine/read_only_env.py."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

import console.cli as cli
import console.source
from engine import read_only_env
from engine.cli import read_only as jobsctl_read_only
from engine.errors import JobsError


class Ran:
    return_code = 0

    def run(self) -> None:
        return None


class Source:
    read_only = False

    class engine:  # noqa: N801  (what the console closes on the way out)
        @staticmethod
        def close() -> None:
            return None


def _open(monkeypatch: pytest.MonkeyPatch, flags: list[str], env: dict[str, str]) -> tuple[Any, list[bool]]:
    opened: list[bool] = []

    def open_source(dsn: str, **kw: Any) -> Any:
        opened.append(kw["read_only"])
        return Source()

    monkeypatch.setattr(console.source, "open_source", open_source)
    monkeypatch.setattr(cli, "make_app", lambda source, opts, cli_dsn=None: Ran())
    r = CliRunner().invoke(cli.app, [*flags, "--dsn", "postgresql://ann@db.internal/app"], env=env)
    return r, opened


@pytest.mark.parametrize(
    "flags, word, read_only",
    [
        ([], "1", True),
        ([], "Yes", True),
        ([], "0", False),
        ([], "", False),
        (["--read-only"], "off", True),
        (["--read-only"], "on", True),
    ],
)
def test_jobs_read_only_is_the_default_of_the_consoles_read_only(
    monkeypatch: pytest.MonkeyPatch, flags: list[str], word: str, read_only: bool
) -> None:
    r, opened = _open(monkeypatch, flags, {"JOBS_DSN": "", "JOBS_READ_ONLY": word})
    assert r.exit_code == 0, r.output
    assert opened == [read_only]


def test_without_the_variable_or_the_flag_the_console_may_act(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JOBS_READ_ONLY", raising=False)
    r, opened = _open(monkeypatch, [], {"JOBS_DSN": ""})
    assert r.exit_code == 0 and opened == [False], r.output


@pytest.mark.parametrize("flags", [[], ["--read-only"]])
def test_a_word_the_variable_does_not_take_is_refused_before_the_console_opens(
    monkeypatch: pytest.MonkeyPatch, flags: list[str]
) -> None:
    r, opened = _open(monkeypatch, flags, {"JOBS_DSN": "", "JOBS_READ_ONLY": "maybe"})
    assert r.exit_code == cli.EXIT_USAGE and opened == []
    assert r.stderr.startswith(
        "error X_INVALID_ARGUMENT: JOBS_READ_ONLY='maybe' is not a switch: on is 1, true, yes or on; off is 0, "
    )
    assert "  fix: export JOBS_READ_ONLY=1\n" in r.stderr


def test_the_console_and_jobsctl_read_the_variable_with_the_one_parser() -> None:
    # One parser, so the two programs cannot come to read a word differently.
    assert cli.env_read_only is read_only_env.env_read_only
    assert jobsctl_read_only.env_read_only is read_only_env.env_read_only
    assert cli.READ_ONLY_ENV == jobsctl_read_only.READ_ONLY_ENV == "JOBS_READ_ONLY"


@pytest.mark.parametrize(
    "word, on",
    [("1", True), ("true", True), ("YES", True), (" On ", True), ("0", False), ("False", False), ("no", False)]
    + [("OFF", False), ("", False), (None, False)],
)
def test_the_one_parser_reads_each_word_for_on_and_off_in_any_case(word: str | None, on: bool) -> None:
    assert read_only_env.env_read_only(word) is on


@pytest.mark.parametrize("word", ["maybe", "2", "y", "read-only"])
def test_the_one_parser_refuses_any_other_word_with_its_fix(word: str) -> None:
    with pytest.raises(JobsError) as refused:
        read_only_env.env_read_only(word)
    assert refused.value.code == "X_INVALID_ARGUMENT" and refused.value.fix == "export JOBS_READ_ONLY=1"
    assert refused.value.cause.startswith(f"JOBS_READ_ONLY={word!r} is not a switch: on is 1, true, yes or on;")


def test_the_consoles_help_names_the_variable() -> None:
    r = CliRunner().invoke(cli.app, ["--help"], env={"COLUMNS": "300"})
    [line] = [ln for ln in r.stdout.splitlines() if "--read-only" in ln]
    assert "default $JOBS_READ_ONLY" in line
