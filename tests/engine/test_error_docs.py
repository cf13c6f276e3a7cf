"""Every error's `docs` link lands on a line of README.md that explains its code."""

from __future__ import annotations

from pathlib import Path

import engine.errors as errors

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def test_every_engine_code_has_its_anchor_and_title_in_the_readme() -> None:
    missing = []
    for c in (errors._CODES[code] for code in errors.ENGINE_CODES):
        anchor = errors.docs_for(c.code).split("#", 1)[1]
        line = f'| <a id="{anchor}"></a>`{c.code}` | {c.title} |'
        if line not in README:
            missing.append(c.code)
    assert missing == [], "add these rows to README.md's error table: " + ", ".join(sorted(missing))
