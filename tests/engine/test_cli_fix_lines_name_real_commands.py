"""Every jobsctl command line the CLI, the actions and the read side write into a text (an error's
fix, a cause's `jobsctl ...` in backticks, a printed "fix: jobsctl ...") names a command that exists
and only options that command takes, checked against the real click app: a fix line naming a flag
that was renamed, or a subcommand that never was, fails here rather than in an on-call's shell. A
fix (the ``fix`` of an error) is one line to run as it stands: no second command or prose after it,
not even an aside saying what to leave out ("(without --flag)": that goes in the cause).

The texts are read from the source (ast), each f-string's values standing for placeholders: a
placeholder where a command's name goes is one of the commands it can be (``_CAN_BE``). Beyond
tests/engine/test_error_fix_commands.py (each literal ``fix=`` starting with "jobsctl "), this reads
the fixes chosen by a condition or assigned first (``fix = a if ... else b``, ``cause, fix = ...``),
the commands a cause or a printed line names, each command of a line joined by ``&&``, and the
commands behind a placeholder."""

from __future__ import annotations

import ast
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer.main

import engine.cli.backfill
import engine.cli.ops
import engine.cli.outbox
import engine.cli.reads
import engine.cli.schedule
import engine.cli.waits
import engine.cli.worker  # noqa: F401  (each module registers its commands on the app)
from engine.cli import app

ROOT = Path(__file__).resolve().parents[2]
AREAS = ("engine/cli", "engine/actions", "engine/introspect")
PH = "\x00"  # a placeholder token: PH + its expression's index
# The commands a placeholder standing for a command's name can be; each must accept the line.
# ANY: the command being run, whichever it is (one of them must accept the line).
ANY = ("*",)
_CAN_BE = {
    "action": ("retry", "cancel", "discard"),
    "command": ("retry", "cancel", "discard"),
    "verb": ("pause", "resume"),
    "command or 'queues'": ANY,
    "CONNECTIONS.command or 'queues'": ANY,
    "group": ANY,
    "ctx.info_name": ANY,
    "sub": ANY,
}
_ENDS = {">", "|", "#", "&&", ";", "2>&1"}


@dataclass(frozen=True)
class Line:
    where: str
    text: str  # placeholders as PH + index
    exprs: tuple[str, ...]
    is_fix: bool

    def shown(self) -> str:
        return re.sub(PH + r"(\d+)", lambda m: "{" + self.exprs[int(m.group(1))] + "}", self.text)


def _render(node: ast.expr, exprs: list[str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        out = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                out.append(str(v.value))
            elif isinstance(v, ast.FormattedValue):
                exprs.append(ast.unparse(v.value))
                out.append(f"{PH}{len(exprs) - 1}")
        return "".join(out)
    return None


def _fix_values(tree: ast.AST) -> set[int]:
    """The ids of the string nodes that are an error's fix: ``fix=...`` and ``fix = ...`` (either
    branch of a conditional), and the fix of a ``cause, fix = ..., ...``."""
    found: set[int] = set()

    def take(v: ast.expr) -> None:
        if isinstance(v, ast.IfExp):
            take(v.body)
            take(v.orelse)
        else:
            found.add(id(v))

    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "fix":
            take(node.value)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name) and t.id == "fix":
                    take(node.value)
                elif isinstance(t, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    for name, v in zip(t.elts, node.value.elts, strict=False):
                        if isinstance(name, ast.Name) and name.id == "fix":
                            take(v)
    return found


def _docstrings(tree: ast.AST) -> set[int]:
    """Docstrings say how to call things in a grammar of their own (``[--json]``, ``a|b``)."""
    kinds = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    firsts = [n.body[0] for n in ast.walk(tree) if isinstance(n, kinds) and n.body]
    return {id(f.value) for f in firsts if isinstance(f, ast.Expr) and isinstance(f.value, ast.Constant)}


def _lines() -> list[Line]:
    out: list[Line] = []
    for area in AREAS:
        for path in sorted((ROOT / area).glob("*.py")):
            tree = ast.parse(path.read_text())
            fixes = _fix_values(tree)
            inner = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
            inner |= _docstrings(tree)
            for node in ast.walk(tree):
                if id(node) in inner or not isinstance(node, (ast.Constant, ast.JoinedStr)):
                    continue
                exprs: list[str] = []
                text = _render(node, exprs)
                if not text or "jobsctl" not in text:
                    continue
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                segments = [m.group(1) for m in re.finditer(r"`(jobsctl [^`]*)`", text)]
                segments += [m.group(1) for m in re.finditer(r"fix: (jobsctl [^\n]*)", text)]
                is_fix = id(node) in fixes
                if text.startswith("jobsctl ") or text == "jobsctl":
                    segments.append(text)
                for seg in segments:
                    for part in seg.split(" && "):
                        out.append(Line(where, part.strip(), tuple(exprs), is_fix and seg == text))
    return out


LINES = _lines()


# typer vendors its own click: its commands are read by what they have, not by click's classes.
def _takes_value(param: Any) -> bool:
    return getattr(param, "param_type_name", "") == "option" and not param.is_flag and not param.count


def _is_group(cmd: Any) -> bool:
    return hasattr(cmd, "commands")


def _options(cmd: Any, ctx: Any) -> dict[str, Any]:
    return {o: p for p in cmd.get_params(ctx) for o in (*p.opts, *p.secondary_opts) if o.startswith("-")}


def _check(cmd: Any, tokens: list[str], exprs: tuple[str, ...], path: str) -> str | None:
    """None when ``tokens`` (after ``path``) parse against ``cmd``; else what is wrong."""
    ctx = cmd.context_class(cmd, info_name=path)
    opts = _options(cmd, ctx)
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if tok == "..." or tok.startswith(PH) and not _is_group(cmd):
            continue  # an argument (or more of them) the reader fills in
        if tok.startswith("-") and tok != "-":
            name = tok.split("=", 1)[0]
            if name not in opts:
                return f"`{path}` has no option {name}"
            if _takes_value(opts[name]) and "=" not in tok:
                i += 1
            continue
        if _is_group(cmd):
            names = [tok]
            if tok.startswith(PH):
                expr = exprs[int(tok[1:])]
                if expr not in _CAN_BE:
                    return f"`{path}` is followed by {{{expr}}}: say in _CAN_BE which commands it can be"
                names = list(_CAN_BE[expr])
            if names == list(ANY):
                tried = [_check(cmd.get_command(ctx, n), tokens[i:], exprs, f"{path} {n}") for n in cmd.commands]
                return None if None in tried else f"no command of `{path}` takes {' '.join(tokens[i:])}"
            for name in names:
                sub = cmd.get_command(ctx, name)
                if sub is None:
                    return f"`{path}` has no command {name!r}"
                wrong = _check(sub, tokens[i:], exprs, f"{path} {name}")
                if wrong:
                    return wrong
            return None
    return None


def _tokens(line: Line) -> list[str]:
    words = shlex.split(line.text.replace("'", "").replace('"', ""), posix=True) if line.text else []
    out: list[str] = []
    for w in words[1:]:
        if w in _ENDS or w.startswith("("):
            break
        out.append(w)
    return out


ROOT_CMD = typer.main.get_command(app)


@pytest.mark.parametrize("line", LINES, ids=[f"{x.where}:{x.shown()[:60]}" for x in LINES])
def test_a_jobsctl_line_in_a_text_names_a_real_command_and_only_its_options(line: Line) -> None:
    wrong = _check(ROOT_CMD, _tokens(line), line.exprs, "jobsctl")
    assert wrong is None, f"{line.where}: {line.shown()!r}: {wrong}"


PROSE = re.compile(r", then |;\s|\s\(")


def test_a_fix_is_a_command_alone_with_no_prose_after_it() -> None:
    prose = [f"{x.where}: {x.shown()!r}" for x in LINES if x.is_fix and PROSE.search(x.shown())]
    assert prose == [], "\n".join(prose)


@pytest.mark.parametrize(
    "fix",
    ["jobsctl worker app.jobs (without --burst)", "jobsctl ls; then jobsctl why q", "jobsctl ls, then jobsctl why q"],
)
def test_an_aside_or_a_second_step_after_a_fix_is_prose(fix: str) -> None:
    assert PROSE.search(fix)


def test_the_walk_reads_the_fix_lines_it_is_meant_to() -> None:
    shown = {x.shown() for x in LINES}
    assert "jobsctl why {row.id}" in shown and "jobsctl retry {job_id} --from-step STEP" in shown
    assert len([x for x in LINES if x.is_fix]) > 50
