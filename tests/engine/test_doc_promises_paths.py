"""Every file of the repository README.md and docs/internals.md send a reader to exists, every test
they cite by name is defined, CI runs the test command README.md opens with, and every Python sample
of README.md parses and imports only names the engine has: a rename cannot leave the docs pointing
at nothing."""

from __future__ import annotations

import ast
import importlib
import re
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("README.md", "docs/internals.md")
PATH = re.compile(r"(?:^|(?<=[\s(`\[]))((?:tests|engine|console|sql|bench|docs|screenshots)/[\w./-]*\w)")
CITED_TEST = re.compile(r"`(?:[\w/]+\.py)?(?:::)?(test_\w+)`")


def test_every_repository_path_the_docs_name_exists() -> None:
    named = {(doc, p) for doc in DOCS for p in PATH.findall((ROOT / doc).read_text())}
    assert len(named) >= 50, "the docs' paths were not found: the pattern is wrong"
    missing = sorted(f"{doc}: {p}" for doc, p in named if not (ROOT / p).exists())
    assert missing == []


def test_every_test_the_docs_cite_by_name_is_defined() -> None:
    defined = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        defined |= set(re.findall(r"^(?:async )?def (test_\w+)", path.read_text(), flags=re.M))
    cited = {(doc, name) for doc in DOCS for name in CITED_TEST.findall((ROOT / doc).read_text())}
    assert cited, "the docs cite no test by name: the pattern is wrong"
    missing = sorted(f"{doc}: {name}" for doc, name in cited if name not in defined)
    assert missing == []


def test_ci_runs_exactly_the_test_command_the_readme_opens_with() -> None:
    readme = (ROOT / "README.md").read_text()
    first = readme.split("```bash\n", 1)[1].split("```", 1)[0]
    (ci,) = [line for line in (ROOT / ".ci/run").read_text().splitlines() if "pytest" in line]
    assert ci in first.splitlines(), "README.md's first block and .ci/run run different commands"
    assert "`.ci/run` runs exactly the second command." in readme


def _python_samples() -> list[tuple[str, str]]:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"^( *)```python\n(.*?)^ *```", text, flags=re.S | re.M)
    return [
        (body.splitlines()[0], textwrap.dedent("\n".join(line.removeprefix(indent) for line in body.splitlines())))
        for indent, body in blocks
    ]


def test_every_python_sample_in_the_readme_parses_and_imports_only_what_the_engine_has() -> None:
    samples = _python_samples()
    assert len(samples) >= 15
    wrong = []
    for first, code in samples:
        # Fragments of an application's async code may await at the top level, as in a coroutine.
        tree = compile(code, first, "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "engine":
                module = importlib.import_module(node.module or "")
                wrong += [
                    f"{first}: from {node.module} import {a.name}" for a in node.names if not hasattr(module, a.name)
                ]
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] == "engine":
                        importlib.import_module(a.name)
    assert wrong == [], "the README imports names the engine does not have"
