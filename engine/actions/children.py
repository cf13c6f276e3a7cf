"""A job's children: the jobs its steps enqueued (``ctx.step.enqueue``) or waited for
(``ctx.step.wait_for_jobs``), read from its stored steps, and theirs in turn. What a cancel with
its children reaches, and what its confirmation names first."""

from __future__ import annotations

from collections.abc import Iterable

from engine.drivers.base import Driver
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.types import JobRow, StoredStep

MAX_CHILDREN = 1000  # past this many descendants a cancel names a filter instead


def child_ids(steps: Iterable[StoredStep]) -> list[str]:
    """The ids a job's stored steps name as its children, in the order it named them, once each."""
    return list(dict.fromkeys(i for s in sorted(steps, key=lambda s: s.seq) for i in s.job_ids or ()))


async def descendants(driver: Driver, root: JobRow, *, limit: int | None = None) -> list[JobRow]:
    """Every job below ``root`` (its children, theirs, ...), breadth first, each once, as they
    stand now; more than ``limit`` (MAX_CHILDREN) is X_INVALID_ARGUMENT (nothing has changed
    yet). An id that names no job any more (pruned, discarded) is passed over."""
    limit = MAX_CHILDREN if limit is None else limit
    seen = {root.id}
    found: list[JobRow] = []
    frontier = [root]
    while frontier:
        ids: list[str] = []
        for row in frontier:
            if row.run == 0:  # never claimed: no step stored, no child
                continue
            ids += [i for i in child_ids(await driver.step_load(job_id=row.id)) if i not in seen]
        ids = list(dict.fromkeys(ids))
        if len(found) + len(ids) > limit:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"job {root.id} has more than {limit:,} jobs below it; a cancel reaches at most {limit:,}",
                fix=f"jobs cancel {root.id}, then jobs cancel --all --filter name=CHILD_NAME",
            )
        seen.update(ids)
        by_id = {r.id: r for r in await driver.job_get_many(job_ids=ids)} if ids else {}
        frontier = [by_id[i] for i in ids if i in by_id]
        found += frontier
    return found
