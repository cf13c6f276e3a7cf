"""The Postgres driver sends a batch as a plain INSERT first (job_enqueue_fresh) and, only when the
dedupe index refuses a replayed live key, again through ON CONFLICT (job_enqueue): I2 holds either
way, and a replay costs its batch a second statement, not a duplicate row."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from engine import api
from engine.api import Engine, Enqueue, connect
from engine.clock import FakeClock
from engine.drivers.migrations import schema_sql
from engine.drivers.postgres import PostgresDriver, wire
from engine.drivers.postgres import jobs as pg_jobs
from engine.drivers.sqlfiles import Q
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.ids import IdFactory
from engine.jobs import job
from engine.types import NewJob

_NAMES = {
    Q.job_enqueue_fresh.text: "fresh",
    Q.job_enqueue.text: "on conflict",
    Q.job_enqueue_fresh.positional[0]: "fresh",
    Q.job_enqueue.positional[0]: "on conflict",
}


@job(name="fresh_email", queue="mail", idempotency_key=lambda inp: f"user:{inp['user_id']}")
def fresh_email(ctx: object, inp: dict[str, int]) -> None:
    return None


class _Sent:
    """Which enqueue statements a driver sent, in order: through a cursor's execute
    (AsyncConnection.execute included), pipelined or not, or through libpq directly (wire.py)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.names: list[str] = []
        real_cursor_execute = psycopg.AsyncCursor.execute

        async def cursor_execute(cur: Any, query: Any, params: Any = None, **kw: Any) -> Any:
            self._note(query)
            return await real_cursor_execute(cur, query, params, **kw)

        monkeypatch.setattr(psycopg.AsyncCursor, "execute", cursor_execute)
        real_run_each, real_fetch = wire.run_each, wire.fetch

        async def run_each(conn: Any, name: str, text: str, each: Any, **kw: Any) -> Any:
            def noted() -> Any:
                for args in each:
                    self._note(text)
                    yield args

            return await real_run_each(conn, name, text, noted(), **kw)

        async def fetch(conn: Any, name: str, text: str, args: Any, **kw: Any) -> Any:
            self._note(text)
            return await real_fetch(conn, name, text, args, **kw)

        monkeypatch.setattr(wire, "run_each", run_each)
        monkeypatch.setattr(wire, "fetch", fetch)

    def _note(self, query: Any) -> None:
        if query in _NAMES:
            self.names.append(_NAMES[query])

    def take(self) -> list[str]:
        out, self.names = self.names, []
        return out


@pytest.fixture
async def eng(pg_dsn: str, clock: FakeClock, ids: IdFactory) -> AsyncIterator[Engine]:
    e = Engine(PostgresDriver(pg_dsn), clock=clock, ids=ids)
    try:
        yield e
    finally:
        await e.aclose()


async def _rows_per_key(dsn: str) -> dict[str, int]:
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        cur = await conn.execute("select idempotency_key, count(*) from jobs.job group by 1")
        return {k: n for k, n in await cur.fetchall()}


async def test_i2_a_batch_of_new_keys_is_one_plain_insert_and_a_replay_goes_again_through_on_conflict(
    eng: Engine, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = _Sent(monkeypatch)
    first = await eng.aenqueue_many([Enqueue(fresh_email, {"user_id": u}) for u in (1, 2, 3)])
    assert sent.take() == ["fresh"] and not any(r.deduped for r in first)

    replay = await eng.aenqueue_many([Enqueue(fresh_email, {"user_id": u}) for u in (4, 2, 5)])
    assert sent.take() == ["fresh", "on conflict"]  # refused whole, then sent again
    assert [r.deduped for r in replay] == [False, True, False] and replay[1].id == first[1].id
    assert await _rows_per_key(pg_dsn) == {f"user:{u}": 1 for u in (1, 2, 3, 4, 5)}

    # For REPLAY_BACKOFF after a replay, batches go straight through ON CONFLICT ...
    await eng.aenqueue_many([Enqueue(fresh_email, {"user_id": u}) for u in (6, 7)])
    assert sent.take() == ["on conflict"]
    # ... and plain again once it has passed.
    monkeypatch.setattr(pg_jobs, "REPLAY_BACKOFF", 0.0)
    await eng.aenqueue_many([Enqueue(fresh_email, {"user_id": u}) for u in (8, 9)])
    assert sent.take() == ["fresh"]


async def test_i2_a_key_replayed_in_a_later_chunk_rolls_the_plain_chunks_back_and_inserts_each_key_once(
    eng: Engine, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(api, "CHUNK", 2)
    sent = _Sent(monkeypatch)
    held = await eng.aenqueue(fresh_email, {"user_id": 9})
    users = [1, 2, 3, 4, 9, 5, 2]  # 9 is live already; 2 again two chunks after its first
    got = await eng.aenqueue_many([Enqueue(fresh_email, {"user_id": u}) for u in users])
    names = sent.take()
    assert names[0] == "fresh" and names[-4:] == ["on conflict"] * 4  # every chunk again, in one transaction
    assert [r.deduped for r in got] == [False, False, False, False, True, False, True]
    assert got[4].id == held.id and got[6].id == got[1].id
    assert await _rows_per_key(pg_dsn) == {f"user:{u}": 1 for u in (1, 2, 3, 4, 5, 9)}


async def test_optimistic_batches_off_sends_every_batch_through_on_conflict(
    pg_dsn: str, clock: FakeClock, ids: IdFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = _Sent(monkeypatch)
    e = connect(pg_dsn, clock=clock, ids=ids, optimistic_batches=False)
    try:
        got = await e.aenqueue_many([Enqueue(fresh_email, {"user_id": u}) for u in (1, 2)])
        again = await e.aenqueue_many([Enqueue(fresh_email, {"user_id": u}) for u in (2, 3)])
    finally:
        await e.aclose()
    assert sent.take() == ["on conflict", "on conflict"]
    assert again[0].deduped and again[0].id == got[1].id and not again[1].deduped


async def test_an_id_minted_twice_is_raised_not_taken_for_a_replayed_key(
    pg_dsn: str, ids: IdFactory, clock: FakeClock
) -> None:
    d = PostgresDriver(pg_dsn)
    await d.open()
    try:
        now = clock.now()
        jid = ids.new()
        one = NewJob(id=jid, name="n", queue="q", idempotency_key="a", input={}, max_attempts=1)
        await d.job_enqueue(jobs=[one, one._replace(id=ids.new(), idempotency_key="b")], now=now)
        with pytest.raises(psycopg.errors.UniqueViolation) as err:
            await d.job_enqueue(
                jobs=[one._replace(idempotency_key="c"), one._replace(id=ids.new(), idempotency_key="d")], now=now
            )
        assert err.value.diag.constraint_name == "job_pkey"
        assert d._replayed_at == float("-inf")  # no back-off: it was no replay
    finally:
        await d.close()
    assert sorted(await _rows_per_key(pg_dsn)) == ["a", "b"]


def test_i2_the_replay_the_driver_recognises_is_a_refusal_by_the_live_dedupe_index() -> None:
    # A unique violation of any other constraint is raised: the name must follow the index.
    assert f"create unique index {pg_jobs.DEDUPE_INDEX} on jobs.job" in schema_sql()


def test_the_memory_driver_refuses_options_it_would_not_honour() -> None:
    with pytest.raises(JobsError) as err:
        connect("memory://", optimistic_batches=False)
    assert err.value.code == X_INVALID_ARGUMENT and "optimistic_batches" in err.value.cause
    assert "connect('memory://')" in err.value.fix


async def _blocked_on_a_lock(dsn: str) -> None:
    """Until some backend of this database waits on a row lock (the batch, on the held key)."""
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        while True:
            cur = await conn.execute(
                "select count(*) from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'"
            )
            row = await cur.fetchone()
            if row is not None and row[0] > 0:
                return
            await asyncio.sleep(0.005)


@pytest.mark.parametrize("holder_commits", [True, False])
async def test_i2_a_plain_batch_racing_an_uncommitted_holder_of_its_key_dedupes_to_it_or_inserts(
    eng: Engine, pg_dsn: str, clock: FakeClock, holder_commits: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = _Sent(monkeypatch)
    async with await psycopg.AsyncConnection.connect(pg_dsn) as other:  # a transaction of another process
        cur = await other.execute(
            "insert into jobs.job"
            " (id, name, queue, idempotency_key, state, max_attempts, run_at, created_at, updated_at)"
            " values (gen_random_uuid(), 'fresh_email', 'mail', 'user:1', 'ready', 3, %(now)s, %(now)s, %(now)s)"
            " returning id::text",
            {"now": clock.now()},
        )
        row = await cur.fetchone()
        assert row is not None
        batch = asyncio.ensure_future(eng.aenqueue_many([Enqueue(fresh_email, {"user_id": u}) for u in (1, 2)]))
        await asyncio.wait_for(_blocked_on_a_lock(pg_dsn), 10)  # the plain insert waits on the held key
        await (other.commit() if holder_commits else other.rollback())
    got = await asyncio.wait_for(batch, 10)
    if holder_commits:
        assert sent.take() == ["fresh", "on conflict"]
        assert got[0].deduped and got[0].id == row[0] and not got[1].deduped
    else:
        assert sent.take() == ["fresh"]
        assert not any(r.deduped for r in got)
    assert await _rows_per_key(pg_dsn) == {"user:1": 1, "user:2": 1}
