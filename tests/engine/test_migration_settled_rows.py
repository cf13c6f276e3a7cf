"""0010_settled_rows: settled rows move from jobs.job to jobs.job_done. An upgrade from 0009 with
live and settled jobs equals a fresh install; a job enqueued before it is still dedupe-protected,
claimable and its history readable after; rows a worker of the previous release settles in place
afterwards are still read, retried and moved (the pruner's pass, `jobsctl migrate`'s batches)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import psycopg
from psycopg.rows import dict_row

from engine.drivers.migrations import migrations
from engine.drivers.postgres.migrate import move_settled
from engine.schema import migrate
from engine.types import Ack, Claim, JobState, Nack, NewJob, WorkerRegistration
from tests.engine.test_migrations import catalog
from tests.engine.upgrades import job_uuid, opened

SETTLED_ROWS = next(m.version for m in migrations() if m.name == "settled_rows")
NOW = datetime(2026, 12, 3, 12, tzinfo=UTC)
_n = itertools.count(1)
_COLS = (
    "id, name, queue, idempotency_key, input, state, attempt, max_attempts, run, run_at, created_at, "
    "updated_at, claimed_by, claimed_at, lease_until, finished_at, error_code, stop_reason"
)


def _seed(dsn: str) -> dict[str, str]:
    """As the release before 0010 wrote them: one job in each state, all in jobs.job, with an
    attempt row and a history entry each. Answers id -> state."""
    states = ["ready", "delayed", "running", "suspended", "parked", "completed", "dead", "cancelled"]
    out = {}
    with psycopg.connect(dsn) as conn:
        for i, state in enumerate(states):
            job_id, settled = job_uuid(i), state in ("completed", "dead", "cancelled")
            claimed = state in ("running", "completed", "dead")
            conn.execute(
                f"insert into jobs.job ({_COLS}) values (%s, 'charge', 'billing', %s, %s, %s, %s, 3, %s, %s, %s, %s,"  # noqa: S608
                " %s, %s, %s, %s, %s, %s)",
                (
                    job_id,
                    f"k{i}",
                    psycopg.types.json.Jsonb({"n": i}),
                    state,
                    1 if claimed else 0,
                    1 if claimed else 0,
                    NOW + timedelta(hours=1) if state == "delayed" else NOW,
                    NOW,
                    NOW,
                    "w1" if claimed else None,
                    NOW if claimed else None,
                    NOW + timedelta(seconds=30) if state == "running" else None,
                    NOW if settled else None,
                    "X_BOOM" if state == "dead" else None,
                    "terminal" if state == "dead" else None,
                ),
            )
            conn.execute(
                "insert into jobs.history (job_id, at, kind, actor) values (%s, %s, 'noted', 'ops')", (job_id, NOW)
            )
            out[job_id] = state
    return out


def _where(dsn: str) -> dict[str, str]:
    """Each job id -> the table holding it: jobs.job, or jobs.job_done for the settled side (since
    0012_settled_buckets a settled row is in one of jobs.job_done's buckets)."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "select id::text, case when tableoid = 'jobs.job'::regclass then 'jobs.job' else 'jobs.job_done' end"
            " from jobs.job"
        ).fetchall()
    return dict(rows)  # type: ignore[arg-type]


def test_upgrading_0009_with_live_and_settled_jobs_equals_a_fresh_install(empty_db: Callable[[], str]) -> None:
    fresh, upgraded = empty_db(), empty_db()
    migrate(fresh)
    migrate(upgraded, target=SETTLED_ROWS - 1)
    jobs = _seed(upgraded)
    migrate(upgraded)
    assert catalog(upgraded) == catalog(fresh)
    live = {"ready", "delayed", "running", "suspended", "parked"}
    assert _where(upgraded) == {
        job_id: ("jobs.job" if state in live else "jobs.job_done") for job_id, state in jobs.items()
    }
    with psycopg.connect(upgraded) as conn:
        got = dict(conn.execute("select id::text, state from jobs.job").fetchall())  # type: ignore[arg-type]
        history = conn.execute("select count(*) from jobs.history").fetchone()
    assert got == jobs and history == (len(jobs),)


async def test_a_job_enqueued_before_0010_is_still_dedupe_protected_claimable_and_readable(
    empty_db: Callable[[], str],
) -> None:
    dsn = empty_db()
    migrate(dsn, target=SETTLED_ROWS - 1)
    before = {j: s for j, s in _seed(dsn).items() if s == "ready"}
    migrate(dsn)
    (old_id,) = before
    async with opened(dsn) as driver:
        again = NewJob(job_uuid(99), "charge", "billing", "k0", {"n": 0}, 3)
        (answer,) = await driver.job_enqueue(jobs=[again], now=NOW)
        assert (answer.id, answer.deduped) == (old_id, True)  # I2 across the upgrade
        (batch_answer, _) = await driver.job_enqueue(jobs=[again, again._replace(id=job_uuid(98))], now=NOW)
        assert batch_answer.id == old_id and batch_answer.deduped
        batch = await driver.worker_claim(queues=["billing"], limit=10, worker="w2", now=NOW, lease_seconds=30)
        claimed = [c.claim for c in batch.jobs if c.row.id == old_id]
        assert claimed == [Claim(old_id, "w2", 1)], batch
        acked = await driver.job_ack_many(acks=[Ack(claimed[0], {"ok": 1})], now=NOW)
        assert acked == [old_id]
        row = await driver.job_get(job_id=old_id)
        assert row is not None and row.state is JobState.COMPLETED and row.result == {"ok": 1}
        assert [h.kind for h in await driver.job_history(job_id=old_id)] == ["noted"]
        assert [(a.run, a.worker, a.outcome) for a in await driver.job_attempts(job_id=old_id)] == [
            (1, "w2", "completed")
        ]
        assert _where(dsn)[old_id] == "jobs.job_done"


async def test_a_row_the_previous_release_settles_in_place_is_read_retried_and_moved(
    empty_db: Callable[[], str],
) -> None:
    dsn = empty_db()
    migrate(dsn)
    async with opened(dsn) as driver:
        ids = [job_uuid(i) for i in range(4)]
        await driver.job_enqueue(jobs=[NewJob(i, "charge", "billing", i, {}, 1) for i in ids], now=NOW)
        await driver.worker_claim(queues=["billing"], limit=10, worker="w1", now=NOW, lease_seconds=30)
        with psycopg.connect(dsn) as conn:  # the previous release's ack and nack: updates in place
            conn.execute(
                "update jobs.job set state = 'completed', finished_at = %s, lease_until = null where id = any(%s)",
                (NOW, ids[:3]),
            )
            conn.execute(
                "update jobs.job set state = 'dead', finished_at = %s, stop_reason = 'terminal' where id = %s",
                (NOW, ids[3]),
            )
        assert set(_where(dsn).values()) == {"jobs.job"}
        assert (await driver.job_get(job_id=ids[3])).state is JobState.DEAD  # type: ignore[union-attr]
        retried = await driver.job_retry_dead(job_id=ids[3], tenant=None, now=NOW, actor="ops")
        assert retried is not None and retried.changed
        assert (await driver.job_get(job_id=ids[3])).state is JobState.READY  # type: ignore[union-attr]
        term = await driver.leader_acquire(name="maintenance", holder="m1", now=NOW, lease_seconds=30)
        assert term is not None
        pruned = await driver.job_prune(
            leader="maintenance", holder="m1", term=term, now=NOW, before=NOW - timedelta(days=1),
            dead_before=NOW - timedelta(days=1), limit=2,
        )  # fmt: skip
        assert pruned == []
        assert sorted(_where(dsn).values()) == ["jobs.job", "jobs.job", "jobs.job_done", "jobs.job_done"]
    with psycopg.connect(dsn, row_factory=dict_row) as conn:
        assert move_settled(conn, batch=1) == 1  # the last one, in batches of one
        assert move_settled(conn, batch=1) == 0
    assert _where(dsn) == {
        ids[0]: "jobs.job_done",
        ids[1]: "jobs.job_done",
        ids[2]: "jobs.job_done",
        ids[3]: "jobs.job",
    }


async def test_each_settling_statement_moves_the_row_to_job_done_and_a_retry_moves_it_back(
    empty_db: Callable[[], str],
) -> None:
    dsn = empty_db()
    migrate(dsn)
    async with opened(dsn) as driver:
        ids = [job_uuid(i) for i in range(3)]
        await driver.job_enqueue(jobs=[NewJob(i, "charge", "billing", i, {}, 1) for i in ids], now=NOW)
        batch = await driver.worker_claim(queues=["billing"], limit=2, worker="w1", now=NOW, lease_seconds=30)
        claims = {c.row.id: c.claim for c in batch.jobs}
        dead_id, lost_id = sorted(claims)
        assert await driver.job_nack(
            nack=Nack(claims[dead_id], "dead", error="boom", error_code="X_BOOM", stop_reason="terminal"), now=NOW
        )
        (cancel_id,) = set(ids) - set(claims)
        assert (await driver.job_cancel(job_id=cancel_id, tenant=None, now=NOW, actor="ops")).cancelled  # type: ignore[union-attr]
        later = NOW + timedelta(minutes=1)  # the claims' 30 s leases lapsed
        term = await driver.leader_acquire(name="maintenance", holder="m1", now=later, lease_seconds=30)
        rescued = await driver.job_rescue(leader="maintenance", holder="m1", term=term or 0, now=later, limit=10)
        assert rescued == [(lost_id, JobState.DEAD)]  # its one attempt was burned: dead, in job_done
        assert _where(dsn) == dict.fromkeys(ids, "jobs.job_done")
        dead = await driver.job_get(job_id=dead_id)
        assert dead is not None and (dead.state, dead.error_code, dead.stop_reason) == (
            JobState.DEAD,
            "X_BOOM",
            "terminal",
        )
        assert [a.outcome for a in await driver.job_attempts(job_id=dead_id)] == ["dead"]
        retried = await driver.job_retry_dead(job_id=dead_id, tenant=None, now=NOW, actor="ops")
        assert retried is not None and retried.changed
        assert _where(dsn)[dead_id] == "jobs.job"
        (again,) = await driver.job_enqueue(jobs=[NewJob(job_uuid(7), "charge", "billing", dead_id, {}, 1)], now=NOW)
        assert (again.id, again.deduped) == (dead_id, True)  # live again: the dedupe index holds it (I2)


async def test_the_orphan_rescue_moves_a_last_lost_attempt_to_job_done_and_keeps_a_retry_live(
    empty_db: Callable[[], str],
) -> None:
    dsn = empty_db()
    migrate(dsn)
    async with opened(dsn) as driver:
        await driver.worker_register(
            worker=WorkerRegistration(id="w1", host="h", pid=1, queues=("billing",), concurrency=4), now=NOW
        )
        await driver.worker_presence_hold(id="w1")
        last, again = job_uuid(1), job_uuid(2)
        await driver.job_enqueue(
            jobs=[NewJob(last, "charge", "billing", "a", {}, 1), NewJob(again, "charge", "billing", "b", {}, 3)],
            now=NOW,
        )
        await driver.worker_claim(queues=["billing"], limit=10, worker="w1", now=NOW, lease_seconds=30)
        await driver.worker_presence_release(id="w1")  # the worker is gone, its jobs still running
        orphans = await driver.job_rescue_orphaned(workers=await driver.worker_gone(), now=NOW, limit=10)
        assert sorted((o.job_id, o.state) for o in orphans) == [(last, JobState.DEAD), (again, JobState.READY)]
        assert _where(dsn) == {last: "jobs.job_done", again: "jobs.job"}
        dead = await driver.job_get(job_id=last)
        assert dead is not None and (dead.stop_reason, dead.error_code) == ("attempts-exhausted", "X_LEASE_LOST")
        assert "is gone" in (dead.last_error or "") and dead.finished_at == NOW
        assert [a.outcome for a in await driver.job_attempts(job_id=last)] == ["lost"]
