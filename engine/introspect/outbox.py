"""The outbox's read models: the backlog view, the rows at its head, and a staged row's "why isn't
it published".

All read the driver's outbox projections only (engine/drivers/*/outbox.py); the CLI (`jobs
outbox`) and the console's Outbox screen print them as they are.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from engine.errors import X_INVALID_ARGUMENT, X_MALFORMED_ID, X_NOT_FOUND, JobsError
from engine.ids import parse_id
from engine.introspect.base import EngineView
from engine.introspect.reads import DEFAULT_COUNT_CAP
from engine.outbox_types import OutboxRow, OutboxView, RelayRecord, StagedWhy
from engine.services.relay import HEARTBEAT_INTERVAL

# The backlog and "published in the last hour" count up to this, as the other views' counts: a
# capped count of 100,000 index entries took 45 ms, past the 50 ms budget with the rest.
COUNT_CAP = DEFAULT_COUNT_CAP
# The most claims and failing rows one answer shows, as a page of `jobsctl ls` holds at most.
MAX_SHOWN = 500
# A relay is alive while its heartbeat is younger than three of its beats.
ALIVE_WINDOW = 3 * HEARTBEAT_INTERVAL


def _alive_since(now: datetime) -> datetime:
    return now - timedelta(seconds=ALIVE_WINDOW)


async def outbox_view(view: EngineView, *, limit: int = 20, count_cap: int = COUNT_CAP) -> OutboxView:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SHOWN:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"limit={limit!r} must be a whole number from 1 to {MAX_SHOWN} (the claims and failing rows shown)",
            fix="jobsctl outbox --limit 20",
        )
    await view._open()
    now = view.clock.now()
    s = await view.driver.outbox_stats(now=now, count_cap=count_cap, limit=limit, alive_since=_alive_since(now))
    age = None if s.oldest_staged_at is None else max(0.0, (now - s.oldest_staged_at).total_seconds())
    return OutboxView(
        backlog=s.backlog,
        backlog_capped=s.backlog_capped,
        oldest_unpublished_at=s.oldest_staged_at,
        oldest_unpublished_age=age,
        published_last_hour=s.published_last_hour,
        holders=s.holders,
        failing=s.failing,
        relays=s.relays,
        now=now,
        published_capped=s.published_last_hour >= count_cap,
    )


async def outbox_rows(view: EngineView, outbox: OutboxView, *, limit: int = 20) -> tuple[StagedWhy, ...]:
    """The rows an operator looks at, in stage order, each with why it is not published yet: the
    backlog's head (the oldest ``limit`` unpublished rows: what the next claim takes, or what holds
    the relays up) and the failing rows ``outbox`` lists. Each sentence is ``outbox_why``'s, read
    against the relays alive and the clock of ``outbox``, so the rows and the figures agree."""
    await view._open()
    head = await view.driver.outbox_head(limit=limit)
    rows = {r.id: r for r in (*head, *outbox.failing)}
    ordered = sorted(rows.values(), key=lambda r: (r.staged_at, r.id))
    return tuple(why_staged(r, outbox.relays, outbox.now, outbox.failing) for r in ordered)


async def outbox_why(view: EngineView, outbox_id: str) -> StagedWhy:
    """Why the staged row ``outbox_id`` is not published yet (or when it was)."""
    oid = parse_id(outbox_id)
    if oid is None:
        raise JobsError(
            X_MALFORMED_ID, cause=f"{outbox_id!r} is not an outbox row id (a UUID)", fix="jobsctl outbox --json"
        )
    await view._open()
    row = await view.driver.outbox_get(id=oid)
    if row is None:
        raise JobsError(
            X_NOT_FOUND,
            cause=f"no outbox row has id {oid} (never staged, rolled back, or pruned after publishing)",
            fix="jobsctl outbox --json",
        )
    now = view.clock.now()
    # limit=1: the oldest failing row, which a waiting row may be queued behind.
    stats = await view.driver.outbox_stats(now=now, count_cap=1, limit=1, alive_since=_alive_since(now))
    return why_staged(row, stats.relays, now, stats.failing)


def _t(dt: datetime | None) -> str:
    return "?" if dt is None else dt.strftime("%Y-%m-%d %H:%M:%S")


def _relay(name: str | None) -> str:
    """A relay as a sentence names it: its id says "relay:" already when it is the default one."""
    return name if name and name.startswith("relay:") else f"relay {name}"


def why_staged(
    row: OutboxRow, relays: tuple[RelayRecord, ...], now: datetime, failing: tuple[OutboxRow, ...] = ()
) -> StagedWhy:
    """The one sentence for a staged row, read from the row and the relays alive at ``now``;
    ``failing``: failing rows (stage order), the oldest of which a waiting row may be behind."""
    status = row.status(now)
    nobody = (
        f"no relay is alive (none beat in the last {ALIVE_WINDOW:g} s): run `jobsctl worker` or "
        "`jobsctl relay --dsn ...` to publish it"
    )
    if status == "published":
        return StagedWhy(row.id, status, f"published at {_t(row.published_at)} as job {row.job_id}", row)
    if status == "held":
        text = (
            f"held by {_relay(row.claimed_by)} until {_t(row.lease_until)} (claimed {_t(row.claimed_at)}): it is "
            "being published now; if that relay died, another takes it once the lease ends"
        )
        return StagedWhy(row.id, status, text, row)
    if row.claim_token is not None:  # claimed, and the lease lapsed: the relay stopped or stalled
        text = f"{_relay(row.claimed_by)} held it until {_t(row.lease_until)} and its lease lapsed; " + (
            "the next claim takes it" if relays else nobody
        )
        return StagedWhy(row.id, "lapsed", text, row)
    if status == "failing":
        text = (
            f"its publish failed {row.attempts} time(s), last at {_t(row.failed_at)}: {row.last_error}; "
            "rows staged after it wait behind it, and " + ("the next claim tries again" if relays else nobody)
        )
        return StagedWhy(row.id, status, text, row)
    if not relays:
        return StagedWhy(row.id, status, nobody, row)
    names = ", ".join(r.id for r in relays[:3]) + (" ..." if len(relays) > 3 else "")
    text = f"waiting for the next claim (relays alive: {names})"
    ahead = next((f for f in failing if (f.staged_at, f.id) < (row.staged_at, row.id)), None)
    if ahead is not None:  # a claim takes the failing row first, and its failure stops the batch (I20)
        text = (
            f"behind row {ahead.id}, whose publish has failed {ahead.attempts} time(s) ({ahead.last_error}): "
            f"each claim takes that row first, and its failure hands this one back with it (relays alive: {names})"
        )
    return StagedWhy(row.id, status, text, row)
