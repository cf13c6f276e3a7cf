"""The console imports Textual (and Rich) only through their public modules: a private module
(``textual.widgets._footer``) may change or vanish in any release, with no deprecation."""

from __future__ import annotations

import ast
from pathlib import Path

CONSOLE = Path(__file__).resolve().parents[2] / "console"


def private_imports(path: Path) -> list[str]:
    """Every ``textual...`` or ``rich...`` module ``path`` imports with a private part (``_x``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = (
            [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else []
        )
        for name in names:
            parts = name.split(".")
            if parts[0] in ("textual", "rich") and any(p.startswith("_") for p in parts[1:]):
                found.append(f"{path.relative_to(CONSOLE.parent)}: {name}")
    return found


def test_the_console_imports_no_private_textual_or_rich_module() -> None:
    found = [hit for path in sorted(CONSOLE.rglob("*.py")) for hit in private_imports(path)]
    assert not found, f"private modules imported: {found}"
