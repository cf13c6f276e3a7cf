"""The torture run's checks of fan-ins (checks.py holds the rest and the evidence): each went on
once its children had settled, a cancel with its children left nothing below it, and a retry with
its children brought a dead one to completion; and the audit log holds each of the operator's
changes once."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from bench.torture.app import FANOUT, child_keys
from bench.torture.checks import Check, Evidence, kind_of


def fan_ins(ev: Evidence) -> Check:
    """A fan-in went on only once every child had settled: its result lists its three children
    completed, and each child key has one job, completed (the fan-out and its step's write are one
    commit, so no fault enqueues a child twice)."""
    by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for j in ev.jobs:
        by_key[j["key"]].append(j)
    problems: list[str] = []
    done = children = 0
    for j in ev.jobs:
        if kind_of(j["key"]) != "fanin" or j["state"] != "completed":
            continue
        done += 1
        said = (j["result"] or {}).get("children")
        if said != ["completed"] * FANOUT:
            problems.append(f"{j['key']}: went on with its children {said}")
        for k in child_keys(j["key"]):
            rows = by_key.get(k, [])
            children += len(rows)
            if [r["state"] for r in rows] != ["completed"]:
                problems.append(f"{j['key']}: child {k} is {[r['state'] for r in rows] or 'missing'}")
    detail = f"{done} fan-ins completed after their children, {children} children completed, each enqueued once"
    return Check(
        "every fan-in went on once its children, each enqueued once, had settled", not problems, detail, tuple(problems)
    )


def cascades(ev: Evidence) -> Check:
    """A fan-in cancelled with its children left nothing below it: the fan-in cancelled, and each
    child key it fanned out has one job, cancelled (a cancel that came before the fan-out leaves
    no child at all: the fan-out's write is fenced on the claim the cancel ended)."""
    by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for j in ev.jobs:
        by_key[j["key"]].append(j)
    problems: list[str] = []
    cancelled = fanned = children = 0
    for s in ev.sent.values():
        if s.kind != "doomed":
            continue
        if not s.cancelled:
            problems.append(f"{s.key}: its cancel never landed")
            continue
        states = [j["state"] for j in by_key.get(s.key, [])]
        if states != ["cancelled"]:
            problems.append(f"{s.key}: {states or 'missing'} after its cancel with children")
            continue
        cancelled += 1
        below = [[j["state"] for j in by_key.get(k, [])] for k in child_keys(s.key, "doomchild")]
        if any(below):
            fanned += 1
        for k, kid in zip(child_keys(s.key, "doomchild"), below):
            children += len(kid)
            if kid not in ([], ["cancelled"]) or (any(below) and not kid):
                problems.append(f"{s.key}: child {k} is {kid or 'missing'} (the fan-out is written whole)")
    detail = (
        f"{cancelled} fan-ins cancelled with their children, {fanned} of them after fanning out: {children} "
        f"children, each cancelled"
    )
    return Check("a fan-in cancelled with its children left nothing below it", not problems, detail, tuple(problems))


def revivals(ev: Evidence) -> Check:
    """A fan-in that died of its dead child and was retried with its children went on once they
    completed: the fan-in completed, its result lists its three children completed, and each child
    key has one job, completed (the retry re-ran the dead child and the wait, not the fan-out)."""
    by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for j in ev.jobs:
        by_key[j["key"]].append(j)
    problems: list[str] = []
    revived = alone = 0
    for s in ev.sent.values():
        if s.kind != "revived":
            continue
        if not (s.revived or s.completed_alone):
            problems.append(f"{s.key}: never retried, never completed")
            continue
        revived += s.revived
        alone += s.completed_alone
        rows = by_key.get(s.key, [])
        if [j["state"] for j in rows] != ["completed"]:
            problems.append(f"{s.key}: {[j['state'] for j in rows] or 'missing'} after its retry with children")
            continue
        if (rows[0]["result"] or {}).get("children") != ["completed"] * FANOUT:
            problems.append(f"{s.key}: went on with its children {(rows[0]['result'] or {}).get('children')}")
        for k in child_keys(s.key, "flakychild"):
            if [r["state"] for r in by_key.get(k, [])] != ["completed"]:
                problems.append(f"{s.key}: child {k} is {[r['state'] for r in by_key.get(k, [])] or 'missing'}")
    if not revived and any(s.kind == "revived" for s in ev.sent.values()):
        problems.append("no revived fan-in died, so none was retried: the path went untested")
    detail = (
        f"{revived} fan-ins dead of a dead child retried with their children, each then completed with its "
        f"children, each enqueued once; {alone} completed without (the flaky child's first run lost to a fault)"
    )
    return Check("a fan-in retried with its children completed with them", not problems, detail, tuple(problems))


def audited(ev: Evidence) -> Check:
    """Each change the operator made to a job under the faults (its cancels with children, its
    retries with children, and the waits they ran again) is one audit log entry, and each entry one
    change: an action and its entry land in one transaction, so a fault between them leaves both
    or neither."""
    changes = Counter((r["target"], r["action"]) for r in ev.operator_changes)
    entries = Counter((r["target"], r["action"]) for r in ev.audit)
    problems = [
        f"{a} of {t}: {n} change(s), {entries[(t, a)]} entr(ies)"
        for (t, a), n in changes.items()
        if entries[(t, a)] != n
    ]
    problems += [f"{a} of {t}: an entry with no change" for (t, a) in entries if (t, a) not in changes]
    if not changes:
        problems.append("the operator changed no job, so the audit log went untested")
    kinds = Counter(a for _, a in changes.elements())
    detail = (
        f"{sum(changes.values())} changes ({', '.join(f'{n} {a}' for a, n in sorted(kinds.items()))}), each one entry"
    )
    return Check("the audit log holds each operator change once", not problems, detail, tuple(problems))
