"""The maintenance area's protocol (engine/drivers/base.py composes it into Driver)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.types import JobState, Orphan

if TYPE_CHECKING:  # engine.records is imported where one is built: a worker never loads it
    from engine.records import IndexRebuilt, IndexSize, SettledBucket, TableRows


# What each upkeep method acts on: the listing that names them (the only names it takes, all of
# the jobs schema) and the call with a listed one.
UPKEEP_LISTINGS = {
    "index": ("index_sizes()", "index_rebuild(..., index=s.index, before=s.bytes) for an s of index_sizes(...)"),
    "table": ("table_rows()", "table_vacuum(table=t.table) for a t of table_rows(...)"),
    "bucket": ("settled_buckets()", "settled_drop(..., bucket=b.n) for a b of settled_buckets(...) with a sealed_at"),
}


def not_listed(kind: str, name: object, said: str = "") -> JobsError:
    """X_INVALID_ARGUMENT, on every driver, for an index, table or bucket its listing does not give
    (``said``: why, in the driver's or the server's words)."""
    listing, call = UPKEEP_LISTINGS[kind]
    return JobsError(
        X_INVALID_ARGUMENT,
        cause=f"{kind} {name!r} is not one {listing} lists" + (f" ({said})" if said else ""),
        fix=call,
    )


def schema_name(kind: str, name: object) -> str:
    """``name`` when it names something of the jobs schema (jobs.NAME), else refused before any
    statement, which would otherwise find it along the search path (an app's own table or index)."""
    if not isinstance(name, str) or not name.startswith("jobs.") or len(name) == len("jobs."):
        raise not_listed(kind, name, "upkeep acts on the jobs schema's own")
    return name


class MaintenanceArea(Protocol):
    """The leader lease and what the leader does, every mutation fenced on its term."""

    async def leader_acquire(self, *, name: str, holder: str, now: datetime, lease_seconds: float) -> int | None:
        """Take or renew a leader lease; its term (grows on each change of holder), or None."""
        ...

    async def leader_release(self, *, name: str, holder: str, term: int, now: datetime) -> None:
        """Give the lease up at once (its end set just before ``now``), so another holder takes it
        at ``now`` with the next term; another holder or a stale term changes nothing."""
        ...

    async def job_rescue(
        self, *, leader: str, holder: str, term: int, now: datetime, limit: int
    ) -> list[tuple[str, JobState]]:
        """Return lapsed-lease running rows to ready (dead on the last attempt), recording the loss:
        up to ``limit``, the longest lapsed first, ties by id (a lease ending at ``now`` has not
        lapsed). The (id, state) pairs come in no set order."""
        ...

    async def job_prune(
        self,
        *,
        leader: str,
        holder: str,
        term: int,
        now: datetime,
        before: datetime,
        dead_before: datetime,
        limit: int,
    ) -> list[str]:
        """Delete up to ``limit`` completed/cancelled rows finished before ``before``, dead ones
        before ``dead_before`` (strictly: a row finished at its cut-off stays), the oldest first,
        ties by id, with their attempts, steps and history; a live row never. The ids come in no
        set order."""
        ...

    async def settled_buckets(self, *, leader: str, holder: str, term: int, now: datetime) -> list[SettledBucket]:
        """The buckets of settled rows, oldest first, the open one last, fenced on the leader's
        term (none for anyone else). The memory driver keeps its settled rows in no bucket and
        answers []."""
        ...

    async def settled_seal(self, *, leader: str, holder: str, term: int, now: datetime) -> int | None:
        """Seal the open bucket and open the next in one transaction; the bucket sealed. None, doing
        nothing, when the leader no longer holds its term or a reader holds the open bucket past a
        short lock timeout (the next pass tries again). X_PERMISSION_DENIED when the role may not.
        The memory driver keeps no bucket and answers None."""
        ...

    async def settled_drop(
        self,
        *,
        leader: str,
        holder: str,
        term: int,
        now: datetime,
        bucket: int,
        before: datetime,
        dead_before: datetime,
    ) -> int | None:
        """Drop sealed ``bucket`` whole once every completed and cancelled row in it finished
        before ``before``, moving its dead letters finished since ``dead_before`` to the open
        bucket first; its jobs' attempts, steps and history go with it. The rows dropped; None,
        changing nothing, when a row is not yet past retention, the lease moved on or a reader
        holds the bucket. X_PERMISSION_DENIED when the role may not. A bucket settled_buckets does
        not list as sealed is X_INVALID_ARGUMENT on every driver (the memory driver keeps no bucket,
        its pruner deletes settled rows one by one); a caller not at the leader's term gets None first."""
        ...

    async def throughput_rollup(self, *, leader: str, holder: str, term: int, now: datetime, settle: float) -> int:
        """Roll completions up per (queue, calendar minute) for every minute that ended ``settle``
        seconds before ``now`` and is not rolled yet (two hours at most); the rows written. A clock
        behind the watermark counts nothing and leaves it. Every pass of the leader drops the
        rolled minutes older than two hours, whether it counts a minute or not. The queues view
        reads rolled minutes instead of counting their rows again."""
        ...

    async def worker_gone(self) -> list[str]:
        """The workers whose presence is gone now: held on this server (in this lifetime of it)
        and no longer."""
        ...

    async def job_rescue_orphaned(self, *, workers: Sequence[str], now: datetime, limit: int) -> list[Orphan]:
        """Re-deliver up to ``limit`` running jobs of those of ``workers`` still gone (as
        worker_gone reads it). Recorded as job_rescue records a lapsed lease; not fenced on a
        leader (any worker may run it, and two never take one row). A pass that took fewer than
        ``limit`` deletes those workers' rows."""
        ...

    async def worker_reap(self, *, before: datetime) -> list[str]:
        """Delete worker rows whose heartbeat stopped strictly before ``before``; their ids. A reaped
        worker is no longer judged by its presence (worker_gone names it no more)."""
        ...

    async def index_sizes(self, *, leader: str, holder: str, term: int, now: datetime) -> list[IndexSize]:
        """The GIN indexes of the jobs tables, each with its size and its baseline (its size after
        its last rebuild; an index seen for the first time gets its size now), fenced on the
        leader's term. A GIN keeps a key for every value it ever indexed, so unique inputs grow it
        for ever: the leader rebuilds one grown past its baseline (index_rebuild). The memory
        driver has no indexes and answers []."""
        ...

    async def index_rebuild(
        self, *, leader: str, holder: str, term: int, now: datetime, index: str, before: int
    ) -> IndexRebuilt | None:
        """Rebuild ``index`` (schema.name, as index_sizes names it; ``before``: its size then)
        without blocking writes, and store its new size as its baseline. One at a time fleet-wide:
        None, doing nothing, when another rebuild is under way or the leader no longer holds its
        term. First drops what an interrupted rebuild left (an invalid ``<index>_ccnew``).
        X_PERMISSION_DENIED when the role does not own the index. An index index_sizes does not list
        is X_INVALID_ARGUMENT on every driver (the memory driver lists none); a caller not at the
        leader's term gets None first."""
        ...

    async def table_rows(self, *, leader: str, holder: str, term: int, now: datetime) -> list[TableRows]:
        """The tables of the jobs schema, each with its live and dead row versions as the server's
        statistics count them, whether this role owns it and whether a transaction older than
        its last vacuum is open (``held``: nothing dead since could be removed), fenced on the
        leader's term (no rows for anyone else). The memory driver keeps no dead versions and
        answers []."""
        ...

    async def table_vacuum(self, *, table: str) -> float:
        """VACUUM ``table`` (schema.name, as table_rows names it) on a connection of its own,
        skipped when another vacuum holds it; the seconds it took. Never blocks enqueues, claims
        or acks. A table table_rows does not list is X_INVALID_ARGUMENT on every driver (the memory
        driver's table_rows names none)."""
        ...
