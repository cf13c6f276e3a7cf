"""MemoryDriver's outbox: the same meaning as sql/queries/outbox.sql, on the injected clock.

An app's transaction here is a ``MemoryTransaction`` (``driver.transaction()``): a stage inside it
is buffered and written when it commits, dropped when it rolls back, so a test of app code reads
the same on this driver as on PostgreSQL. Outside one (``eng.stage(None, ...)``) there is nothing
to join: the engine publishes directly, as it does for a psycopg connection in autocommit. The
fence is per claim (its token), as in SQL; published rows are kept as the audit trail, as in SQL.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any

from engine.codec import check_json
from engine.drivers.base_outbox import OutboxTarget
from engine.drivers.dedupe import dedupe_key
from engine.drivers.memory.inserts import insert_jobs
from engine.drivers.memory.state import MemoryBase, Wakeups
from engine.drivers.outbox_lease import claim_lease_ms
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.outbox_types import OutboxHolder, OutboxRow, OutboxStats, RelayRecord
from engine.types import NewJob


class MemoryTransaction:
    """An app transaction on the memory driver: ``with driver.transaction() as tx:`` (or ``async
    with``) commits on a clean exit and rolls back on an exception; ``commit()``/``rollback()``
    end it by hand. Stages inside it are seen by no relay until it commits."""

    def __init__(self, owner: MemoryOutbox) -> None:
        self._owner = owner
        self._staged: list[OutboxRow] = []
        self.open = True

    def _add(self, rows: list[OutboxRow]) -> None:
        if not self.open:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause="the memory transaction was already committed or rolled back",
                fix="with driver.transaction() as tx: eng.stage(tx, job, input)",
            )
        self._staged += rows

    def commit(self) -> None:
        if self.open:
            self.open = False
            self._owner._commit_staged(self._staged)
            self._staged = []

    def rollback(self) -> None:
        self.open = False
        self._staged = []

    def __enter__(self) -> MemoryTransaction:
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.commit() if et is None else self.rollback()

    async def __aenter__(self) -> MemoryTransaction:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(et, e, tb)


class _MemoryTarget:
    def __init__(self, tx: MemoryTransaction) -> None:
        self._tx = tx
        self.in_transaction = True  # an ended one refuses the stage (_add), as nothing would commit it
        self.is_async: bool | None = None  # stage() and astage() alike

    def stage(self, *, jobs: Sequence[NewJob], now: datetime) -> None:
        self._tx._add([_row(j, now) for j in jobs])

    async def astage(self, *, jobs: Sequence[NewJob], now: datetime) -> None:
        self.stage(jobs=jobs, now=now)


def _row(j: NewJob, now: datetime) -> OutboxRow:
    return OutboxRow(
        j.id,
        now,
        j.name,
        j.queue,
        j.tenant,
        j.idempotency_key,
        check_json(j.input),
        j.run_at,
        j.max_attempts,
        j.priority,
        trace=None if j.trace is None else dict(j.trace),
    )


_CHANNEL = frozenset({"outbox"})  # the jobs_outbox channel: one name, woken as a whole


class MemoryOutbox(MemoryBase):
    def _outbox(self) -> dict[str, OutboxRow]:
        return self.state.outbox

    def _relays(self) -> dict[str, RelayRecord]:
        return self.state.outbox_relays

    def _outbox_wakeups(self) -> Wakeups:
        return self.state.outbox_wakeups

    def transaction(self) -> MemoryTransaction:
        """An app transaction to stage in (this driver only)."""
        return MemoryTransaction(self)

    def _commit_staged(self, rows: list[OutboxRow]) -> None:
        with self.state.lock:
            table = self._outbox()
            for r in rows:
                table[r.id] = r
        if rows:
            self._outbox_wakeups().notify(set(_CHANNEL))  # as the NOTIFY PostgreSQL sends at commit

    def outbox_target(self, tx: object) -> OutboxTarget:
        if not isinstance(tx, MemoryTransaction) or tx._owner is not self:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"the memory driver stages inside its own transactions, not in {type(tx).__name__}",
                fix="with eng.driver.transaction() as tx: eng.stage(tx, job, input)",
            )
        return _MemoryTarget(tx)

    async def outbox_claim(
        self, *, relay: str, token: str, limit: int, now: datetime, lease_ms: int
    ) -> list[OutboxRow]:
        until = now + timedelta(milliseconds=claim_lease_ms(lease_ms))
        with self.state.lock:
            table = self._outbox()
            free = sorted(
                (
                    r
                    for r in table.values()
                    if r.published_at is None
                    and (r.claim_token is None or (r.lease_until is not None and r.lease_until < now))
                ),
                key=lambda r: (r.staged_at, r.id),  # total: the id breaks a shared staged_at in stage order
            )[:limit]
            out = []
            for r in free:
                table[r.id] = row = replace(r, claimed_by=relay, claim_token=token, claimed_at=now, lease_until=until)
                out.append(row)
            return out

    async def outbox_publish_batch(
        self, *, relay: str, token: str, limit: int, now: datetime, job_ids: Sequence[str]
    ) -> list[str] | None:
        with self.state.lock:
            table = self._outbox()
            free = sorted(
                (
                    r
                    for r in table.values()
                    if r.published_at is None
                    and (r.claim_token is None or (r.lease_until is not None and r.lease_until < now))
                ),
                key=lambda r: (r.staged_at, r.id),
            )[:limit]
            jobs = [r.new_job(jid) for r, jid in zip(free, job_ids)]
            keys = [dedupe_key(j.name, j.tenant, j.idempotency_key) for j in jobs if j.idempotency_key is not None]
            if len(set(keys)) < len(keys) or any(k in self.state.live_keys for k in keys):
                return None  # as the plain insert's unique violation: nothing written
            _, fresh = insert_jobs(self.state, jobs, now)
            for r, j in zip(free, jobs):
                table[r.id] = replace(
                    r,
                    claimed_by=relay,
                    claim_token=token,
                    claimed_at=now,
                    lease_until=None,
                    published_at=now,
                    job_id=j.id,
                )
        self._wake(fresh)
        return [r.id for r in free]

    async def outbox_mark_published(
        self, *, token: str, published: Sequence[tuple[str, str]], now: datetime
    ) -> list[str]:
        done: list[str] = []
        with self.state.lock:
            table = self._outbox()
            for rid, job_id in published:
                r = table.get(rid)
                if r is None or r.claim_token != token or r.published_at is not None:
                    continue
                table[rid] = replace(r, published_at=now, job_id=job_id, lease_until=None)
                done.append(rid)
        return done

    async def outbox_release(
        self, *, token: str, ids: Sequence[str], failed: str | None, error: str | None, now: datetime
    ) -> list[str]:
        done: list[str] = []
        with self.state.lock:
            table = self._outbox()
            for rid in ids:
                r = table.get(rid)
                if r is None or r.claim_token != token or r.published_at is not None:
                    continue
                r = replace(r, claimed_by=None, claim_token=None, claimed_at=None, lease_until=None)
                if rid == failed:
                    r = replace(r, attempts=r.attempts + 1, last_error=error, failed_at=now)
                table[rid] = r
                done.append(rid)
        return done

    async def outbox_wait(self, *, timeout: float) -> bool:
        return await _wait(self._outbox_wakeups(), timeout)

    async def outbox_get(self, *, id: str) -> OutboxRow | None:
        with self.state.lock:
            return self._outbox().get(id)

    async def outbox_stats(self, *, now: datetime, count_cap: int, limit: int, alive_since: datetime) -> OutboxStats:
        hour_ago = now - timedelta(hours=1)
        with self.state.lock:
            rows = sorted(self._outbox().values(), key=lambda r: (r.staged_at, r.id))
            relays = tuple(sorted((r for r in self._relays().values() if r.heartbeat_at > alive_since), key=_id))
        waiting = [r for r in rows if r.published_at is None]
        published = sum(1 for r in rows if r.published_at is not None and hour_ago < r.published_at <= now)
        claims: dict[tuple[str, str], list[OutboxRow]] = {}
        for r in waiting:
            if r.claim_token is not None and r.lease_until is not None and r.lease_until >= now:
                claims.setdefault((r.claimed_by or "", r.claim_token), []).append(r)
        holders = [
            OutboxHolder(relay, token, len(held), max(h.lease_until or now for h in held), held[0].staged_at)
            for (relay, token), held in claims.items()
        ]
        return OutboxStats(
            backlog=min(len(waiting), count_cap),
            backlog_capped=len(waiting) >= count_cap,
            oldest_staged_at=waiting[0].staged_at if waiting else None,
            published_last_hour=min(published, count_cap),
            holders=tuple(sorted(holders, key=lambda h: h.oldest_staged_at)[:limit]),
            failing=tuple(r for r in waiting if r.attempts > 0)[:limit],
            relays=relays,
        )

    async def outbox_head(self, *, limit: int) -> list[OutboxRow]:
        with self.state.lock:
            waiting = [r for r in self._outbox().values() if r.published_at is None]
        return sorted(waiting, key=lambda r: (r.staged_at, r.id))[:limit]

    async def outbox_relay_beat(self, *, relay: str, now: datetime) -> None:
        with self.state.lock:
            cur = self._relays().get(relay)
            self._relays()[relay] = RelayRecord(relay, cur.started_at if cur else now, now)

    async def outbox_relay_gone(self, *, relay: str) -> None:
        with self.state.lock:
            self._relays().pop(relay, None)

    async def outbox_prune(
        self, *, leader: str, holder: str, term: int, now: datetime, before: datetime, limit: int
    ) -> int:
        with self.state.lock:
            if not self.state.leads(leader, holder, term, now):
                return 0
            table = self._outbox()
            doomed = sorted(
                (r for r in table.values() if r.published_at is not None and r.published_at < before),
                key=lambda r: r.published_at,  # type: ignore[arg-type, return-value]
            )[:limit]
            for r in doomed:
                del table[r.id]
            for rid in [k for k, v in self._relays().items() if v.heartbeat_at < before]:
                del self._relays()[rid]
            return len(doomed)


def _id(r: RelayRecord) -> str:
    return r.id


async def _wait(wake: Wakeups, timeout: float) -> bool:
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[bool] = loop.create_future()
    entry = (_CHANNEL, loop, fut)
    with wake.lock:
        wake.waiters.append(entry)
    timer = loop.call_later(timeout, _time_out, fut)
    try:
        return await fut
    finally:
        timer.cancel()
        with wake.lock:
            if entry in wake.waiters:
                wake.waiters.remove(entry)


def _time_out(fut: asyncio.Future[Any]) -> None:
    if not fut.done():
        fut.set_result(False)
