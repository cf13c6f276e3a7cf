"""A cancel with its children, on every driver: the job, then every live job below it (those its
steps enqueued or waited for, and theirs), each audited with the note and the job it went with;
jobs already settled are left as they are, another tenant's are out of a tenant's reach (I25), and
a tree past the limit is refused before anything changes."""

from __future__ import annotations

import asyncio
import json

import pytest

from engine.actions import children
from engine.actions.children import MAX_CHILDREN, descendants
from engine.api import Engine, Enqueue
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.drivers.postgres import PostgresDriver
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.ids import IdFactory
from engine.jobs import job
from engine.testing import arun_due
from engine.types import Ack, JobState, Nack
from tests.engine.test_cli_introspect import cli

Q = "cancel-children"


@job(name="cc.leaf", queue=f"{Q}-leaves", idempotency_key=lambda inp: inp["k"])
async def leaf(ctx, inp):  # type: ignore[no-untyped-def]
    return inp["k"]


@job(name="cc.branch", queue=f"{Q}-branches", idempotency_key=lambda inp: inp["k"])
async def branch(ctx, inp):  # type: ignore[no-untyped-def]
    # Fans out and goes on without waiting: its leaves are its children all the same.
    return await ctx.step.enqueue("leaves", [Enqueue(leaf, {"k": f"{inp['k']}/{n}"}) for n in range(2)])


@job(name="cc.root", queue=Q, idempotency_key=lambda inp: inp["k"])
async def root(ctx, inp):  # type: ignore[no-untyped-def]
    kids = [Enqueue(leaf, {"k": f"{inp['k']}/leaf"}), Enqueue(branch, {"k": f"{inp['k']}/branch"})]
    ids = await ctx.step.enqueue("fan-out", kids)
    return await ctx.step.wait_for_jobs("fan-in", ids)


@job(name="cc.mixed", queue=Q, idempotency_key=lambda inp: inp["k"])
async def mixed(ctx, inp):  # type: ignore[no-untyped-def]
    mine, theirs = Enqueue(leaf, {"k": f"{inp['k']}/mine"}, ctx.tenant), Enqueue(leaf, {"k": f"{inp['k']}/x"}, "globex")
    return await ctx.step.enqueue("fan-out", [mine, theirs])


@pytest.fixture
def eng(driver: Driver, clock: FakeClock) -> Engine:
    return Engine(driver, clock=clock, ids=IdFactory(clock, seed=21))


async def tree(eng: Engine, k: str) -> tuple[str, dict[str, str]]:
    """A root waiting on a leaf and a branch that ran and enqueued two leaves of its own: the
    root's leaf completed, the branch's two leaves ready. Answers the root's id and its jobs' ids
    by key."""
    top = (await eng.aenqueue(root, {"k": k})).id
    await arun_due(eng, [root])
    await arun_due(eng, [branch])
    below = await eng.operator().children(top)
    by_key = {r.idempotency_key: r.id for r in below}
    got = await eng.driver.worker_claim(
        queues=[f"{Q}-leaves"], limit=3, worker="w", now=eng.clock.now(), lease_seconds=60
    )
    done = next(c for c in got.jobs if c.row.idempotency_key == f"{k}/leaf")
    for c in got.jobs:  # the others back to ready: released, as a draining worker hands them back
        if c is not done:
            assert await eng.driver.job_nack(nack=Nack(c.claim, "release", run_at=eng.clock.now()), now=eng.clock.now())
    assert await eng.driver.job_ack_many(acks=[Ack(done.claim, "ok")], now=eng.clock.now())
    return top, by_key


async def test_a_cancel_with_children_cancels_every_live_job_below_and_leaves_the_settled_ones(
    eng: Engine, driver: Driver, request: pytest.FixtureRequest
) -> None:
    top, ids = await tree(eng, "t1")
    assert sorted(ids) == ["t1/branch", "t1/branch/0", "t1/branch/1", "t1/leaf"]
    before = {r.id: r.state for r in await driver.job_get_many(job_ids=list(ids.values()))}
    settled = [i for i, s in before.items() if s is not JobState.READY and s is not JobState.DELAYED]
    live = [i for i in ids.values() if i not in settled]

    if isinstance(driver, PostgresDriver):  # the CLI: a dry run, a confirmation, then each one, the job first
        args = (
            "cancel",
            top,
            "--children",
            "--note",
            "INC-7",
            "--actor",
            "ann",
            "--dsn",
            request.getfixturevalue("pg_dsn"),
        )
        no = await asyncio.to_thread(cli, *args, input="n\n")
        assert no.exit_code != 0 and "nothing changed" in no.output
        assert (
            f"dry run: cancel {top} and the {len(live)} live jobs below it ({len(live)} ready); 2 below it" in no.output
        )
        assert (await eng.aget(top)).state is JobState.SUSPENDED
        r = await asyncio.to_thread(cli, *args, "--yes")
        assert r.exit_code == 0, r.output
        lines = r.stdout.splitlines()[1:]  # after the dry run's line
        assert lines[0].startswith(f"cancel {top}: done (suspended -> cancelled)")
        assert f"{len(live)} jobs below it cancelled" in lines[0]
        assert sorted(line.split()[1].rstrip(":") for line in lines[1:]) == sorted(live)
        res = None
    else:
        res = await eng.acancel(top, actor="ann", note="INC-7", children=True)
        assert res.changed and res.state is JobState.CANCELLED
        assert sorted(a.job_id for a in res.also) == sorted(live) and all(a.changed for a in res.also)

    after = {r.id: r for r in await driver.job_get_many(job_ids=[top, *ids.values()])}
    assert after[top].state is JobState.CANCELLED
    assert all(after[i].state is JobState.CANCELLED for i in live)
    assert all(after[i].state is before[i] for i in settled)  # the completed leaf and the ran branch
    history = await driver.job_history(job_id=live[0])
    (entry,) = [h for h in history if h.kind == "cancelled"]
    assert entry.actor == "ann" and entry.note == f"INC-7 (with job {top})"
    assert res is None or "below it cancelled" in (res.reason or "")


async def test_a_cancel_without_children_leaves_the_jobs_below_running(eng: Engine, driver: Driver) -> None:
    top, ids = await tree(eng, "t2")
    res = await eng.acancel(top, actor="ann")
    assert res.changed and res.also == ()
    rows = await driver.job_get_many(job_ids=list(ids.values()))
    assert JobState.CANCELLED not in {r.state for r in rows}


async def test_a_tenants_operator_neither_sees_nor_cancels_another_tenants_job_below_i25(
    eng: Engine, driver: Driver
) -> None:
    top = (await eng.aenqueue(mixed, {"k": "t3"}, tenant="acme")).id
    await arun_due(eng, [mixed])
    everyone = {r.idempotency_key: r for r in await eng.operator(actor="root").children(top)}
    assert {k: r.tenant for k, r in everyone.items()} == {"t3/mine": "acme", "t3/x": "globex"}
    acme = eng.operator(actor="ann", tenant="acme")
    assert [r.idempotency_key for r in await acme.children(top)] == ["t3/mine"]
    res = await acme.cancel(top, children=True)  # the root completed: only its live job below
    assert not any(a.job_id == everyone["t3/x"].id for a in res.also)
    assert (await eng.aget(everyone["t3/mine"].id)).state is JobState.CANCELLED
    assert (await eng.aget(everyone["t3/x"].id)).state is JobState.READY
    assert res.changed and "1 job below it cancelled" in (res.reason or "")


async def test_a_cancel_with_more_jobs_below_than_the_limit_is_refused_before_anything_changes(
    eng: Engine, driver: Driver, monkeypatch: pytest.MonkeyPatch
) -> None:
    top, ids = await tree(eng, "t4")
    assert len(await descendants(driver, await eng.aget(top))) == 4 and MAX_CHILDREN == 1000
    monkeypatch.setattr(children, "MAX_CHILDREN", 3)
    with pytest.raises(JobsError) as exc:
        await eng.acancel(top, actor="ann", children=True)
    assert exc.value.code == X_INVALID_ARGUMENT and "more than 3 jobs below it" in exc.value.cause
    assert "--filter" in exc.value.fix
    assert (await eng.aget(top)).state is JobState.SUSPENDED
    assert JobState.CANCELLED not in {r.state for r in await driver.job_get_many(job_ids=list(ids.values()))}


def test_jobs_cancel_children_with_all_is_refused_and_names_the_one_job_form() -> None:
    r = cli("cancel", "--all", "--filter", "queue=x", "--children", "--dsn", "postgresql://nobody@localhost/none")
    assert r.exit_code != 0 and "--children cancels the jobs below one job" in r.output
    assert "jobsctl cancel JOB_ID --children" in r.output


async def test_a_job_below_gone_between_the_walk_and_its_cancel_is_passed_over_and_the_rest_cancelled(
    eng: Engine, driver: Driver, monkeypatch: pytest.MonkeyPatch
) -> None:
    top, ids = await tree(eng, "t5")
    gone = ids["t5/branch/0"]
    real = driver.job_cancel

    async def pruned_meanwhile(**kw):  # type: ignore[no-untyped-def]
        return None if kw["job_id"] == gone else await real(**kw)

    monkeypatch.setattr(driver, "job_cancel", pruned_meanwhile)
    res = await eng.acancel(top, actor="ann", children=True)
    assert [a.job_id for a in res.also] == [ids["t5/branch/1"]] and res.also[0].changed
    assert (await eng.aget(ids["t5/branch/1"])).state is JobState.CANCELLED


@pytest.mark.parametrize("driver", ["postgres"], indirect=True)  # the CLI reads a database by its DSN
async def test_jobs_children_lists_the_jobs_below_by_state_as_a_cancel_with_children_would_reach_them(
    eng: Engine, request: pytest.FixtureRequest
) -> None:
    top, ids = await tree(eng, "t6")
    dsn = request.getfixturevalue("pg_dsn")
    r = await asyncio.to_thread(cli, "children", top, "--dsn", dsn)
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0] == f"4 jobs below {top}: 2 completed, 2 ready"
    assert all(i in r.stdout for i in ids.values())
    r = await asyncio.to_thread(cli, "children", top, "--json", "--dsn", dsn)
    assert sorted(j["id"] for j in json.loads(r.stdout)) == sorted(ids.values())
    r = await asyncio.to_thread(cli, "children", top, "--tenant", "globex", "--dsn", dsn)
    assert r.exit_code == 3 and not r.stdout and "X_NOT_FOUND" in r.output  # I25: not another tenant's to read
