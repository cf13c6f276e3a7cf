"""What the torture run proves at its end, each check a line: what held, and the counts behind it.

Everything is read after the fleet drained: the jobs, their stored steps and attempt records, the
application's ledger of executions, the outbox, the application's orders, the cron task's state,
and the workers' logs. Re-runs are expected (handlers are at-least-once) and are counted here,
not hidden: a run that lost its claim ran its handler for nothing, and a step body that ran
before its result could be stored ran again in the next run.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bench.torture.load import Sent

# kind -> (final state, stop reason) every job of that kind must reach.
EXPECTED: dict[str, tuple[str, str | None]] = {
    "plain": ("completed", None),
    "staged": ("completed", None),
    "steps": ("completed", None),
    "sleep": ("completed", None),
    "slow": ("completed", None),
    "wait": ("completed", None),
    "staged-wait": ("completed", None),
    "later": ("completed", None),
    "busy": ("completed", None),
    "tick": ("completed", None),
    "fanin": ("completed", None),
    "fanchild": ("completed", None),
    "doomed": ("cancelled", None),
    "doomchild": ("cancelled", None),
    "revived": ("completed", None),
    "flakychild": ("completed", None),
    "terminal": ("dead", "terminal"),
    "unclassified": ("dead", "attempts-exhausted"),
}
LIVE = ("ready", "delayed", "running", "parked", "suspended")
STEPS = ("a", "b", "c")
TICK = "torture.tick"


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    problems: tuple[str, ...] = ()

    def line(self) -> str:
        return f"[{'ok' if self.ok else 'FAIL':4}] {self.name}: {self.detail}"


@dataclass
class Evidence:
    """Everything the checks read, gathered once after the run."""

    jobs: list[dict[str, Any]]
    executions: list[dict[str, Any]]
    steps: list[dict[str, Any]]
    attempts: list[dict[str, Any]]
    outbox: list[dict[str, Any]]
    orders: set[str]
    schedule: list[dict[str, Any]]
    direct_counts: dict[str, int]
    projected: dict[str, Any]  # the queues view's counts for the queue, and the dead letters' total
    sent: dict[str, Sent]
    now: datetime
    logs: dict[str, str] = field(default_factory=dict)  # log file -> text
    stalls: list[dict[str, Any]] = field(default_factory=list)
    stalled_events: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # log -> its JSON events
    operator_changes: list[dict[str, Any]] = field(default_factory=list)  # the operator's, from histories
    audit: list[dict[str, Any]] = field(default_factory=list)  # the audit log's entries of them


def kind_of(key: str) -> str:
    if key.startswith(TICK + "@"):
        return "tick"
    return key.rsplit("-", 2)[0]


def _few(items: list[str], n: int = 5) -> str:
    return ", ".join(items[:n]) + (f" (+{len(items) - n} more)" if len(items) > n else "")


def settled(ev: Evidence) -> Check:
    """Every committed enqueue has its job, in the state its kind must end in, or is legitimately
    still waiting (a retry or a durable sleep not yet due). An event wait whose event was sent is
    never legitimately waiting."""
    by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for j in ev.jobs:
        by_key[j["key"]].append(j)
    problems: list[str] = []
    states: Counter[str] = Counter()
    waiting = unknown_commits = 0
    for s in ev.sent.values():
        if s.rolled_back:
            continue
        rows = by_key.get(s.key, [])
        if s.committed is None:  # the commit's answer was lost: the order row says whether it landed
            unknown_commits += 1
            if s.key not in ev.orders:
                continue
        if not rows:
            problems.append(f"{s.key}: committed, no job")
            continue
    for key, rows in by_key.items():
        kind = kind_of(key)
        want_state, want_stop = EXPECTED[kind]
        for j in rows:
            states[j["state"]] += 1
            if j["state"] in LIVE:
                if _legitimately_waiting(j, ev.now):
                    waiting += 1
                else:
                    problems.append(f"{key}: still {j['state']} (wait {j['wait']})")
            elif (j["state"], j["stop_reason"]) != (want_state, want_stop):
                problems.append(
                    f"{key}: {j['state']}/{j['stop_reason']} ({j['error_code']}) at attempt {j['attempt']} of "
                    f"{j['max_attempts']}, expected {want_state}/{want_stop}"
                )
    unpublished = [o["key"] for o in ev.outbox if not o["published"]]
    for key in unpublished:
        problems.append(f"{key}: staged, never published")
    total = sum(states.values())
    shown = ", ".join(f"{n} {state}" for state, n in sorted(states.items()))
    detail = f"{total} jobs ({shown}); {waiting} legitimately waiting; {unknown_commits} commits unanswered"
    return Check("every committed enqueue settled", not problems, detail, tuple(problems))


def _legitimately_waiting(j: dict[str, Any], now: datetime) -> bool:
    wait = j["wait"] or {}
    if j["state"] == "delayed":
        return bool(j["run_at"] > now)  # a retry's backoff not yet over
    if j["state"] == "suspended" and wait.get("kind") == "sleep":
        return datetime.fromisoformat(wait["until"]) > now
    return False  # an event wait: every event was sent; ready, running, parked: nothing stops them


def rolled_back(ev: Evidence) -> Check:
    keys = {s.key for s in ev.sent.values() if s.rolled_back}
    jobs = [j["key"] for j in ev.jobs if j["key"] in keys]
    ran = sorted({e["key"] for e in ev.executions if e["key"] in keys})
    staged = [o["key"] for o in ev.outbox if o["key"] in keys]
    orders = sorted(keys & ev.orders)
    problems = [f"{k}: a job" for k in jobs] + [f"{k}: ran" for k in ran]
    problems += [f"{k}: an outbox row" for k in staged] + [f"{k}: its order" for k in orders]
    detail = (
        f"{len(keys)} staging transactions rolled back: {len(jobs)} jobs, {len(ran)} ran, {len(staged)} outbox rows"
    )
    return Check("no rolled-back staging ran", not problems, detail, tuple(problems))


def _by_run(ev: Evidence) -> dict[tuple[str, int, str], list[dict[str, Any]]]:
    out: dict[tuple[str, int, str], list[dict[str, Any]]] = defaultdict(list)
    for e in ev.executions:
        out[(e["job_id"], e["run"], e["step"])].append(e)
    return out


def one_completion(ev: Evidence) -> Check:
    """A completed job's result names the run that completed it and that run's own execution;
    that run executed its handler once, and no other record settled the same run."""
    runs = _by_run(ev)
    settled_runs = {(a["job_id"], a["run"]) for a in ev.attempts}
    problems: list[str] = []
    completed = 0
    for j in ev.jobs:
        if j["state"] != "completed":
            continue
        completed += 1
        result = j["result"] or {}
        mine = runs.get((j["id"], j["run"], ""), [])
        if result.get("run") != j["run"]:
            problems.append(f"{j['key']}: completed by run {j['run']}, the result says run {result.get('run')}")
        if len(mine) != 1 or mine[0]["token"] != result.get("token"):
            problems.append(f"{j['key']}: run {j['run']} executed {len(mine)} times, result token not its own")
        if (j["id"], j["run"]) in settled_runs:
            problems.append(f"{j['key']}: run {j['run']} completed and also settled another way")
    detail = f"{completed} completed jobs, each completed once, by the run that executed it"
    return Check("every completed job has exactly one completion", not problems, detail, tuple(problems))


def steps_once(ev: Evidence) -> Check:
    """I9: a stored step result was produced by one execution of its body, in the run that stored
    it, and the body never ran again once stored. Executions in earlier runs are re-runs."""
    runs = _by_run(ev)
    by_step: dict[tuple[str, str], list[int]] = defaultdict(list)
    for e in ev.executions:
        if e["step"]:
            by_step[(e["job_id"], e["step"])].append(e["run"])
    problems: list[str] = []
    stored = rerun = 0
    by_job: dict[str, set[str]] = defaultdict(set)
    for s in ev.steps:
        if s["kind"] != "run" or s["status"] != "completed":
            continue
        stored += 1
        by_job[s["job_id"]].add(s["name"])
        mine = runs.get((s["job_id"], s["run"], s["name"]), [])
        token = (s["result"] or {}).get("token")
        if len(mine) != 1 or mine[0]["token"] != token:
            problems.append(f"{s['job_id']}/{s['name']}: run {s['run']} executed {len(mine)} times for one write")
        ran = by_step[(s["job_id"], s["name"])]
        later = [r for r in ran if r > s["run"]]
        if later:
            problems.append(f"{s['job_id']}/{s['name']}: ran again in run {later[0]} after its result was stored")
        rerun += sum(1 for r in ran if r < s["run"])
    for j in ev.jobs:
        if kind_of(j["key"]) == "steps" and j["state"] == "completed" and by_job[j["id"]] != set(STEPS):
            problems.append(f"{j['key']}: completed with steps {sorted(by_job[j['id']])}")
    detail = f"{stored} stored step results, each from one execution; {rerun} step bodies re-ran before a write"
    return Check("every stored step ran once per successful write", not problems, detail, tuple(problems))


def cron_once(ev: Evidence) -> Check:
    """I21: each occurrence enqueued once; every second between the first and the last enqueued
    occurrence is enqueued or counted as skipped by catch-up."""
    keys = [j["key"] for j in ev.jobs if kind_of(j["key"]) == "tick"]
    twice = sorted(k for k, n in Counter(keys).items() if n > 1)
    instants = sorted(datetime.fromisoformat(k.split("@", 1)[1].replace("Z", "+00:00")) for k in set(keys))
    skipped = sum(int(r["skipped"]) for r in ev.schedule if r["task"] == TICK)
    missing = 0
    if instants:
        expected = int((instants[-1] - instants[0]).total_seconds()) + 1
        missing = expected - len(instants)
    problems = [f"{k}: enqueued twice" for k in twice]
    if missing > skipped:
        problems.append(f"{missing} occurrences between the first and the last missing, {skipped} counted skipped")
    detail = f"{len(instants)} occurrences, none twice; {missing} missing in between, {skipped} skipped by catch-up"
    return Check("each cron occurrence was enqueued once", not problems, detail, tuple(problems))


def projections(ev: Evidence) -> Check:
    """The console's numbers (the queues view, the dead letters) against a direct count."""
    problems: list[str] = []
    compared = []
    for state in ("ready", "delayed", "running", "suspended", "parked", "dead"):
        shown = ev.projected.get(state)
        direct = ev.direct_counts.get(state, 0)
        if shown is None:
            continue
        value, exact = shown
        compared.append(f"{state} {value}" + ("" if exact else " (capped: not compared)"))
        if exact and value != direct:
            problems.append(f"queues view says {state} {value}, a direct count {direct}")
    done = ev.projected.get("completed_last_hour")
    if done is not None:
        value, exact = done
        direct = ev.direct_counts.get("completed", 0)
        compared.append(f"completed last hour {value}" + ("" if exact else " (capped: not compared)"))
        if exact and value != direct:
            problems.append(f"queues view says {value} completed in the last hour, a direct count {direct}")
    spark = ev.projected.get("throughput")
    if spark is not None:
        value, exact = spark
        compared.append(f"sparkline minutes {value}" + ("" if exact else " (past the hour: not compared)"))
        if exact and value != ev.direct_counts.get("completed", 0):
            problems.append(
                f"the sparkline's minutes add up to {value}, a direct count of completed {ev.direct_counts.get('completed', 0)}"
            )
    dead = ev.projected.get("dead_letters")
    if dead is not None:
        value, exact = dead
        compared.append(f"dead letters {value}" + ("" if exact else " (capped: not compared)"))
        if exact and value != ev.direct_counts.get("dead", 0):
            problems.append(f"dead letters total {value}, a direct count {ev.direct_counts.get('dead', 0)}")
    return Check("projections' counts equal a direct count", not problems, "; ".join(compared), tuple(problems))


def _lost_last_attempt(j: dict[str, Any]) -> bool:
    """The lost run was the job's last attempt: the rescuer made it dead (X_LEASE_LOST,
    attempts-exhausted) rather than deliver it again, as a lost attempt counts as one."""
    return j["state"] == "dead" and j["error_code"] == "X_LEASE_LOST" and j["attempt"] >= j["max_attempts"]


def stalled_worker(ev: Evidence) -> Check:
    """The stalled worker's jobs went to another claim while it slept (or, when its run was the
    job's last attempt, dead; or an operator cancelled them meanwhile); it acked none of them, and
    it logged each loss when it woke."""
    problems: list[str] = []
    jobs = {j["id"]: j for j in ev.jobs}
    held = noticed = 0
    for stall in ev.stalls:
        events = ev.stalled_events.get(stall["log"], [])
        told = {e.get("job_id") for e in events if e.get("event") in ("jobs.lease.lost", "jobs.worker.settle-failed")}
        for h in stall["held"]:
            held += 1
            j = jobs.get(h["job_id"])
            if j is None:
                problems.append(f"{h['job_id']}: gone")
                continue
            if j["run"] == h["run"] and j["claimed_by"] == h["worker"] and j["state"] == "completed":
                problems.append(f"{j['key']}: completed by the stalled worker's lost run {h['run']}")
            elif j["run"] == h["run"] and not _lost_last_attempt(j) and j["state"] != "cancelled":
                problems.append(f"{j['key']}: never re-delivered while its worker stalled ({j['state']})")
            if h["job_id"] in told:
                noticed += 1
            elif j["run"] != h["run"]:
                problems.append(f"{j['key']}: the stalled worker never logged losing run {h['run']}")
    detail = (
        f"{len(ev.stalls)} stalls holding {held} jobs: each re-delivered (or cancelled meanwhile), none acked by it, "
        f"{noticed} losses logged"
    )
    return Check("a stalled worker acks nothing it lost, and notices", not problems, detail, tuple(problems))


def reruns(ev: Evidence) -> dict[str, int]:
    """Handler executions that were for nothing (their run lost its claim) and step bodies that
    ran again: expected under at-least-once, reported."""
    outcome = {(a["job_id"], a["run"]): a["outcome"] for a in ev.attempts}
    final = {j["id"]: (j["run"], j["state"]) for j in ev.jobs}
    counts: Counter[str] = Counter()
    for e in ev.executions:
        if e["step"]:
            continue
        counts["handler runs"] += 1
        o = outcome.get((e["job_id"], e["run"]))
        if o is None:
            run, state = final.get(e["job_id"], (None, None))
            # A cancelled fan-in's looks before its cancel kept no attempt row of their own (a
            # resumed run continues its suspension's): ended by the cancel, not run for nothing.
            o = state if run == e["run"] or state == "cancelled" else "unsettled"
        if o in ("lost", "released", "unsettled"):
            counts[f"re-run ({o})"] += 1
    return dict(counts)


def last_settled(ev: Evidence, n: int = 3) -> list[str]:
    """The jobs that finished last, and how long each took from its creation: where the end waited."""
    done = sorted((j for j in ev.jobs if j["finished_at"] is not None), key=lambda j: j["finished_at"])[-n:]
    return [
        f"{j['key']} {j['state']} after {(j['finished_at'] - j['created_at']).total_seconds():.1f} s "
        f"(run {j['run']}, attempt {j['attempt']})"
        for j in reversed(done)
    ]


def gone_while_alive(ev: Evidence) -> tuple[int, int]:
    """(workers declared gone while they were alive, jobs re-delivered for it): a worker whose
    presence session a fault ended is taken for dead by the others until it takes its presence
    again, and its running jobs are re-delivered. Reported, not asserted: the presence design's
    price under backend kills."""
    last: dict[str, float] = {}
    gone: list[tuple[float, str, int]] = []
    for text in ev.logs.values():
        me, latest = None, 0.0
        for line in text.splitlines():
            if not line.startswith("{"):
                continue
            try:
                e = json.loads(line)
            except ValueError:
                continue
            latest = max(latest, float(e.get("ts", 0)))
            if e.get("event") == "jobs.worker.started":
                me = e.get("worker")
            if e.get("event") == "jobs.worker.gone":
                for w in e.get("workers", []):
                    gone.append((float(e["ts"]), w, int(e.get("count", 0))))
        if me:
            last[me] = latest
    alive = [(w, n) for ts, w, n in gone if last.get(w, 0.0) > ts + 1.0]
    return len(alive), sum(n for _, n in alive)


def secrets(ev: Evidence, password: str, marker: str) -> Check:
    """Neither the DSN's password nor the marker every input carries appears in any worker log."""
    problems = [f"{name}: shows the password" for name, text in ev.logs.items() if password in text]
    problems += [f"{name}: shows an input" for name, text in ev.logs.items() if marker in text]
    lines = sum(text.count("\n") for text in ev.logs.values())
    detail = f"{len(ev.logs)} worker logs, {lines} lines: no password, no input"
    return Check("no log shows the DSN's password or a job's input", not problems, detail, tuple(problems))


def plain_lines(ev: Evidence) -> list[str]:
    """Log lines that are not JSON events, but for the start banner."""
    out = []
    for name, text in ev.logs.items():
        for line in text.splitlines():
            if line and not line.startswith("{") and not line.startswith("jobsctl worker "):
                out.append(f"{name}: {line[:160]}")
    return out
