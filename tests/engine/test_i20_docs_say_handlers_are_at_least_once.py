"""I20's second half: the docs say plainly that handlers are at-least-once, in the transactional
outbox section (where a reader might believe the outbox makes delivery exactly-once) and in the
concepts a reader meets first, and each says why a handler runs twice and what to do about it."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _section(text: str, heading: str) -> str:
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def test_i20_the_outbox_section_says_handlers_are_at_least_once_and_to_write_them_idempotent() -> None:
    outbox = " ".join(_section((ROOT / "README.md").read_text(), "Transactional outbox").split())
    assert "**Handlers are at-least-once. Write them idempotent.**" in outbox
    # Why: the relay's crash between publish and mark, and a lost lease, each run a job again.
    assert "publishes it again" in outbox and "loses its lease runs the job again" in outbox


def test_i20_the_concepts_say_handlers_are_at_least_once() -> None:
    concepts = " ".join(_section((ROOT / "README.md").read_text(), "Concepts").split())
    assert "**Handlers are at-least-once**" in concepts
