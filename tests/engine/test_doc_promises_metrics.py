"""The metric names README.md and docs/internals.md promise are the ones a worker exports, with the
labels they say, and every family a worker exports is named in README.md's reference."""

from __future__ import annotations

import re
from pathlib import Path

from prometheus_client import generate_latest

from engine.runtime.metrics import DurationHistogram, Metrics

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("README.md", "docs/internals.md")
# A backticked metric: a family name with a metric's ending, labels optional (`jobs_total{queue,outcome}`).
MENTION = re.compile(
    r"`((?:jobs|job|queue|outbox)(?:_[a-z0-9_]*)?_(?:total|seconds|in_use|jobs)|queue_depth|outbox_backlog"
    r"|lease_lost_total)(?:\{([a-z_,]*)\})?`"
)


def _exported() -> dict[str, tuple[str, ...]]:
    """Each family a worker's registry exposes, by the name its text exposition carries, with its labels."""
    metrics = Metrics()
    text = generate_latest(metrics.registry).decode()
    families: dict[str, tuple[str, ...]] = {}
    for f in vars(metrics).values():
        if isinstance(f, DurationHistogram):
            families[f.name] = ("queue",)  # its family() labels each series by queue
        elif hasattr(f, "labelnames"):
            families[f.name] = tuple(f.labelnames)
    for name in families:
        assert f"# HELP {name} " in text, f"{name} is declared but not in the exposition:\n{text}"
    return families


def _mentions() -> list[tuple[str, str, tuple[str, ...] | None]]:
    found = []
    for doc in DOCS:
        for m in MENTION.finditer((ROOT / doc).read_text()):
            labels = tuple(m.group(2).split(",")) if m.group(2) is not None else None
            found.append((doc, m.group(1), labels))
    return found


def test_every_metric_the_docs_name_is_exported_with_the_labels_they_give_it() -> None:
    exported = _exported()
    mentions = _mentions()
    assert len(mentions) >= 15, "the metric reference moved: update MENTION"
    wrong = []
    for doc, name, labels in mentions:
        if name not in exported:
            wrong.append(f"{doc}: `{name}` is not a metric the code exports ({', '.join(sorted(exported))})")
        elif labels is not None and labels != exported[name]:
            wrong.append(f"{doc}: `{name}{{{','.join(labels)}}}` is labelled {{{','.join(exported[name])}}}")
    assert wrong == []


def test_every_exported_metric_is_named_in_the_readme() -> None:
    named = {name for doc, name, _ in _mentions() if doc == "README.md"}
    missing = sorted(set(_exported()) - named)
    assert missing == [], "README.md's Metrics section lacks: " + ", ".join(missing)


EVENT = re.compile(r"`(jobs\.[a-z_]+\.[a-z_.-]*[a-z])`")


def test_every_log_event_or_column_the_docs_name_is_one_the_code_emits_or_the_schema_has() -> None:
    """`jobs.worker.gone` is a log event; `jobs.job.trace` a column of the table jobs.job."""
    sql = "\n".join(p.read_text() for p in (ROOT / "sql").rglob("*.sql"))
    tables = set(re.findall(r"create (?:unlogged )?table (?:if not exists )?(jobs\.\w+)", sql, flags=re.I))
    assert "jobs.job" in tables
    product = "\n".join(p.read_text() for d in ("engine", "console") for p in (ROOT / d).rglob("*.py"))
    events = set(re.findall(r"[\"'](jobs\.[a-z_]+\.[a-z_.-]+)[\"']", product))
    named = {(doc, e) for doc in DOCS for e in EVENT.findall((ROOT / doc).read_text())}
    assert len(named) >= 30, "the docs' log events were not found: the pattern is wrong"

    def known(name: str) -> bool:
        table, _, column = name.rpartition(".")
        return name in events or (table in tables and re.search(rf"\b{column}\b", sql) is not None)

    missing = sorted(f"{doc}: {e}" for doc, e in named if not known(e))
    assert missing == [], "named in the docs, yet neither a log event the code emits nor a column"
