"""A job's children: the jobs its steps enqueued (``ctx.step.enqueue``) or waited for
(``ctx.step.wait_for_jobs``), read from its stored steps, and theirs in turn. What a cancel or a
retry with its children reaches, and what its confirmation names first."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from engine.drivers.base import Driver
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.types import JobRow, StoredStep, waited_out

MAX_CHILDREN = 1000  # past this many descendants a cancel or retry names a filter instead


def child_ids(steps: Iterable[StoredStep]) -> list[str]:
    """The ids a job's stored steps name as its children, in the order it named them, once each."""
    return list(dict.fromkeys(i for s in sorted(steps, key=lambda s: s.seq) for i in s.job_ids or ()))


def restart_step(steps: Iterable[StoredStep], now: Mapping[str, str]) -> str | None:
    """The step a job retried with its children runs again from: its first wait for jobs whose
    stored answer no longer holds, an outcome's state not what ``now`` (id -> state) says of that
    job as it stands, the jobs this retry made ready among them, or a wait that timed out (its
    stored answer, none, is what the retry is to look past). That wait looks at them afresh, its
    timeout counted anew; the steps after it run again, those before it replay (so a fan-out names
    the same children). Reading the jobs as they stand, not only those retried in this call, lets
    a second retry finish one that was interrupted after its children had gone. None when every
    stored answer holds."""
    for s in sorted(steps, key=lambda s: s.seq):
        if waited_out(s):
            return s.name
        if s.kind == "jobs" and isinstance(s.result, list):
            said = ((str(o.get("id")), o.get("state")) for o in s.result if isinstance(o, dict))
            if any(i in now and now[i] != state for i, state in said):
                return s.name
    return None


async def descendants(
    driver: Driver, root: JobRow, *, limit: int | None = None, action: str = "cancel"
) -> list[JobRow]:
    """Every job below ``root`` (its children, theirs, ...), breadth first, each once, as they
    stand now; more than ``limit`` (MAX_CHILDREN) is X_INVALID_ARGUMENT (nothing has changed
    yet). An id that names no job any more (pruned, discarded) is passed over."""
    limit = MAX_CHILDREN if limit is None else limit
    seen = {root.id}
    found: list[JobRow] = []
    frontier = [root]
    again = ""  # the root's first wait for jobs, which a retry by hand runs again from
    while frontier:
        ids: list[str] = []
        for row in frontier:
            if row.run == 0:  # never claimed: no step stored, no child
                continue
            steps = await driver.step_load(job_id=row.id)
            if row is root:
                waits = [s.name for s in sorted(steps, key=lambda s: s.seq) if s.kind == "jobs"]
                again = f" --from-step {waits[0]}" if waits else ""
            ids += [i for i in child_ids(steps) if i not in seen]
        ids = list(dict.fromkeys(ids))
        if len(found) + len(ids) > limit:
            # By hand: a cancel stops the job first (it fans out no more), then the rest by filter; a
            # retry brings the jobs below back first, then runs the job again from its wait on them, if
            # it waited for them (a plain retry would replay the answer it stored, and die the same way).
            fix = (
                f"jobsctl cancel {root.id} && jobsctl cancel --all --filter name=CHILD_NAME"
                if action == "cancel"
                else f"jobsctl retry --all --filter name=CHILD_NAME && jobsctl retry {root.id}{again}"
            )
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"job {root.id} has more than {limit:,} jobs below it; a {action} reaches at most {limit:,}",
                fix=fix,
            )
        seen.update(ids)
        by_id = {r.id: r for r in await driver.job_get_many(job_ids=ids)} if ids else {}
        frontier = [by_id[i] for i in ids if i in by_id]
        found += frontier
    return found
