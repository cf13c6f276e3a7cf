"""Every error's fix that names a `jobsctl` command names one that exists, with options that command
(or its group, or the root) takes: an error's one-line fix is what the operator types next, so a
renamed command or flag must not leave fixes pointing at nothing. Read from the source: each
``fix=`` given as a string or f-string that starts with "jobsctl "; a fix whose command is a
placeholder (``jobsctl {command} ...``, ``jobsctl COMMAND``) is checked where its words are literal."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from typer.main import get_command

from engine.cli import app

ROOT = Path(__file__).resolve().parents[2]
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def _fixes() -> list[tuple[str, str]]:
    """(where, text) of every literal `jobsctl ...` fix in engine/, placeholders as {}."""
    found = []
    for path in sorted((ROOT / "engine").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.keyword) and node.arg == "fix"):
                continue
            v = node.value
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                text = v.value
            elif isinstance(v, ast.JoinedStr):
                text = "".join(x.value if isinstance(x, ast.Constant) else "{}" for x in v.values)  # type: ignore[misc]
            else:
                continue
            if text.startswith("jobsctl "):
                found.append((f"{path.relative_to(ROOT)}:{node.value.lineno}", text))
    return found


def _options(command: Any) -> set[str]:
    return {opt for p in command.params for opt in p.opts}


def test_every_jobsctl_command_an_errors_fix_names_exists_with_its_options() -> None:
    root = get_command(app)
    fixes = _fixes()
    assert len(fixes) > 40  # the scan finds the fixes (61 when written)
    wrong = []
    for where, text in fixes:
        words = text.split()[1:]
        while words and words[0].startswith("--"):  # root options first: --connect-timeout 2 queues
            words = words[2:] if len(words) > 1 and not words[1].startswith("-") else words[1:]
        chain, command = [root], root
        for word in words:
            sub = getattr(command, "commands", {}).get(word)
            if sub is None:
                break
            chain.append(sub)
            command = sub
        if command is root:
            if words and "{" not in words[0] and not words[0].isupper():  # {cmd} or COMMAND: a placeholder
                wrong.append(f"{where}: {text!r}: no command {words[0]!r}")
            continue
        known = set().union(*(_options(c) for c in chain))
        wrong += [f"{where}: {text!r}: no option {o}" for o in OPTION.findall(text) if o not in known]
    assert wrong == []
