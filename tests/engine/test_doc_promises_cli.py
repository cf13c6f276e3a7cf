"""What README.md and docs/internals.md say about the command lines is what the programs take: every
`jobsctl ...` and `jobs-console ...` they write runs a command that exists with options it has,
every `python -m ...` of the project takes the options written after it, every option of the two
programs is said in README.md, and every $JOBS_* variable README.md names is one the code reads."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import typer

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("README.md", "docs/internals.md")
OPTION = re.compile(r"(?<![\w-])--?[a-z][a-z0-9-]*")


@dataclass
class Command:
    params: list[frozenset[str]] = field(default_factory=list)  # each option's spellings (-f, --filter)
    commands: dict[str, Command] = field(default_factory=dict)

    @property
    def options(self) -> set[str]:
        return {o for spellings in self.params for o in spellings}


def _tree(cmd: Any) -> Command:
    node = Command()
    for p in cmd.params:
        if p.param_type_name == "option" and "--help" not in p.opts:
            node.params.append(frozenset({*p.opts, *p.secondary_opts}))
    node.commands = {name: _tree(sub) for name, sub in getattr(cmd, "commands", {}).items()}
    return node


def _programs() -> dict[str, Command]:
    from console.cli import app as console_app
    from engine.cli import app as jobsctl_app

    return {
        "jobsctl": _tree(typer.main.get_command(jobsctl_app)),
        "jobs-console": _tree(typer.main.get_command(console_app)),
    }


def _code_lines(text: str) -> Iterator[str]:
    """Every inline code span, and every line of a shell block, with its comment cut off."""
    spans = re.findall(r"`([^`\n]+)`", text)
    for block in re.findall(r"```(?:bash|sh)\n(.*?)```", text, flags=re.S):
        spans += block.splitlines()
    for span in spans:
        yield span.split(" #")[0]


def _invocations(program: str) -> Iterator[tuple[str, str]]:
    for doc in DOCS:
        for line in _code_lines((ROOT / doc).read_text()):
            m = re.search(rf"(?:^|[\s(]){re.escape(program)}(\s.*|$)", line)
            if m:
                yield doc, m.group(1)


@pytest.mark.parametrize("program", ["jobsctl", "jobs-console"])
def test_every_invocation_the_docs_write_names_a_command_and_options_it_has(program: str) -> None:
    root = _programs()[program]
    seen, wrong = 0, []
    for doc, words in _invocations(program):
        seen += 1
        node, path = root, [program]
        for word in re.split(r"[\s\[\]=]+", words.replace("|", " | ")):
            if word in node.commands:
                node = node.commands[word]
                path.append(word)
            elif OPTION.fullmatch(word.rstrip(",.;:)`")):
                option = word.rstrip(",.;:)`")
                if option not in node.options | root.options | {"--help"}:
                    wrong.append(f"{doc}: `{program}{words}`: {' '.join(path)} takes no {option}")
    assert seen >= (30 if program == "jobsctl" else 4), "the docs' invocations were not found: the pattern is wrong"
    assert wrong == []


def test_every_option_and_command_of_the_programs_is_said_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    said = set(OPTION.findall(readme))
    untold = []

    def walk(node: Command, path: list[str]) -> None:
        for spellings in node.params:
            if not spellings & said:
                untold.append(f"{' '.join(path)} {'/'.join(sorted(spellings))}")
        for name, sub in node.commands.items():
            if not re.search(rf"{re.escape(' '.join(path))}[^`\n]*\b{re.escape(name)}\b", readme):
                untold.append(f"{' '.join(path)} {name} (the command)")
            walk(sub, [*path, name])

    for program, root in _programs().items():
        walk(root, [program])
    assert untold == [], "README.md says nothing of: " + "; ".join(untold)


def _modules() -> dict[str, set[tuple[str, str]]]:
    """The project's `python -m MODULE --option ...` the docs write, each with its options."""
    found: dict[str, set[tuple[str, str]]] = {}
    for doc in (*DOCS, "bench/README.md"):
        for line in _code_lines((ROOT / doc).read_text()):
            for m in re.finditer(r"python -m ((?:bench|console)[\w.]*)([^`;&|]*)", line):
                for word in m.group(2).split():  # --worker-option=--retention=120: one option, its value
                    if OPTION.fullmatch(word.split("=")[0]):
                        found.setdefault(m.group(1), set()).add((doc, word.split("=")[0]))
    return found


@pytest.mark.parametrize("module", sorted(_modules()))
def test_every_python_module_command_the_docs_write_takes_its_options(module: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    taken = set(OPTION.findall(done.stdout))
    wrong = sorted(f"{doc}: python -m {module} {option}" for doc, option in _modules()[module] if option not in taken)
    assert wrong == [], "no such option: " + "; ".join(wrong)


def test_every_jobs_variable_the_readme_names_is_read_by_the_code_and_back() -> None:
    readme = (ROOT / "README.md").read_text()
    named = set(re.findall(r"\bJOBS_[A-Z_]*[A-Z]\b", readme))
    code = "\n".join(
        p.read_text()
        for d in ("engine", "console", "tests")
        for p in (ROOT / d).rglob("*.py")
        if p.name != Path(__file__).name
    )
    unread = sorted(v for v in named if not re.search(rf"\b{v}\b", code))
    assert len(named) >= 10
    assert unread == [], "README.md names variables no code reads: " + ", ".join(unread)
    product = "\n".join(p.read_text() for d in ("engine", "console") for p in (ROOT / d).rglob("*.py"))
    read = set(re.findall(r"[\"'](JOBS_[A-Z_]+)[\"']", product))
    assert sorted(read - named) == [], "variables the programs read that README.md never names"
