"""A retry with its children, on every driver: every dead job below a dead fan-in is retried, the
deepest first, and each job whose wait for jobs names one of them runs again from that wait, so
the tree finishes once the fault is fixed; what is not dead below it stays as it is, a job below
that cannot be retried is said and passed over, and a tree past the limit is refused before
anything changes."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest

from engine.actions import children
from engine.api import Engine, Enqueue
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.drivers.postgres import PostgresDriver
from engine.errors import X_INVALID_ARGUMENT, X_INVALID_STATE, JobsError
from engine.ids import IdFactory
from engine.introspect import Introspector
from engine.jobs import job
from engine.projections import JobFilter
from engine.retry import RetryPolicy
from engine.testing import arun_due
from engine.types import LIVE_STATES, JobState
from tests.engine.test_cli_introspect import cli

Q = "retry-children"
ONCE = RetryPolicy(attempts=1)
FAULT = {"on": True}  # the fault the on-call engineer fixes before the retry


@pytest.fixture(autouse=True)
def faulty() -> None:
    FAULT["on"] = True


@job(name="rc.leaf", queue=f"{Q}-leaves", idempotency_key=lambda inp: inp["k"], retry=ONCE)
async def leaf(ctx, inp):  # type: ignore[no-untyped-def]
    if inp.get("flaky") and FAULT["on"]:
        raise RuntimeError("smtp down")
    return inp["k"]


async def gather(ctx: Any, k: str, kids: list[Enqueue]) -> list[Any]:
    """Fan out, wait for every job, and fail unless each completed."""
    outcomes = await ctx.step.wait_for_jobs("fan-in", await ctx.step.enqueue("fan-out", kids))
    if any(o["state"] != "completed" for o in outcomes):
        raise RuntimeError(f"{k}: a job below failed")
    return [o["result"] for o in outcomes]


@job(name="rc.branch", queue=f"{Q}-branches", idempotency_key=lambda inp: inp["k"], retry=ONCE)
async def branch(ctx, inp):  # type: ignore[no-untyped-def]
    k = inp["k"]
    return await gather(ctx, k, [Enqueue(leaf, {"k": f"{k}/ok"}), Enqueue(leaf, {"k": f"{k}/bad", "flaky": True})])


@job(name="rc.root", queue=Q, idempotency_key=lambda inp: inp["k"], retry=ONCE)
async def root(ctx, inp):  # type: ignore[no-untyped-def]
    k = inp["k"]
    kids = [
        Enqueue(leaf, {"k": f"{k}/ok"}),
        Enqueue(leaf, {"k": f"{k}/bad", "flaky": True}),
        Enqueue(branch, {"k": f"{k}/branch"}),
    ]
    return await gather(ctx, k, kids)


@job(name="rc.patient", queue=f"{Q}-patient", idempotency_key=lambda inp: inp["k"], retry=ONCE)
async def patient(ctx, inp):  # type: ignore[no-untyped-def]
    """Fan out one leaf and wait a minute for it; dead when the wait times out first."""
    ids = await ctx.step.enqueue("fan-out", [Enqueue(leaf, {"k": f"{inp['k']}/slow"})])
    outcomes = await ctx.step.wait_for_jobs("fan-in", ids, timeout=60)
    if outcomes is None:
        raise RuntimeError("the job below did not settle in time")
    return [o["result"] for o in outcomes]


EVERY = [root, branch, leaf, patient]


@pytest.fixture
def eng(driver: Driver, clock: FakeClock) -> Engine:
    return Engine(driver, clock=clock, ids=IdFactory(clock, seed=23))


async def settle(eng: Engine, clock: FakeClock, job_id: str) -> JobState:
    """Run the tree until ``job_id`` has settled, the clock moved on to each fan-in's next look."""
    for _ in range(10):
        await arun_due(eng, EVERY)
        if (state := (await eng.aget(job_id)).state) not in LIVE_STATES:
            return state
        clock.advance(5)
    raise AssertionError(f"job {job_id} is still {state.value}")


async def failed_tree(eng: Engine, clock: FakeClock, k: str) -> tuple[str, dict[str, str]]:
    """A root dead because a leaf below it and its branch died (the branch because its own leaf
    did); answers the root's id and the ids of the jobs below it by key."""
    top = (await eng.aenqueue(root, {"k": k})).id
    assert await settle(eng, clock, top) is JobState.DEAD
    return top, {r.idempotency_key: r.id for r in await eng.operator().children(top)}


async def test_a_retry_with_children_retries_the_dead_below_deepest_first_and_the_fan_ins_from_their_waits(
    eng: Engine, driver: Driver, clock: FakeClock, request: pytest.FixtureRequest
) -> None:
    top, ids = await failed_tree(eng, clock, "t1")
    rows = {r.idempotency_key: r for r in await driver.job_get_many(job_ids=list(ids.values()))}
    states = {k: r.state for k, r in rows.items()}
    assert states == {
        "t1/ok": JobState.COMPLETED,
        "t1/bad": JobState.DEAD,
        "t1/branch": JobState.DEAD,
        "t1/branch/ok": JobState.COMPLETED,
        "t1/branch/bad": JobState.DEAD,
    }
    ok_finished = rows["t1/ok"].finished_at
    FAULT["on"] = False

    if isinstance(driver, PostgresDriver):  # the CLI: a dry run, a confirmation, then each one
        args = (
            "retry",
            top,
            "--children",
            "--note",
            "INC-9",
            "--actor",
            "ann",
            "--dsn",
            request.getfixturevalue("pg_dsn"),
        )
        no = await asyncio.to_thread(cli, *args, input="n\n")
        assert no.exit_code != 0 and "nothing changed" in no.output
        codes = Counter(r.error_code for r in rows.values() if r.state is JobState.DEAD)
        tally = ", ".join(f"{n} {code}" for code, n in codes.most_common())
        assert f"dry run: retry {top} and the 3 dead jobs below it ({tally}); 2 below it are not dead" in no.output
        assert (await eng.aget(ids["t1/bad"])).state is JobState.DEAD
        r = await asyncio.to_thread(cli, *args, "--yes")
        assert r.exit_code == 0, r.output
        lines = r.stdout.splitlines()[1:]  # after the dry run's line
        assert lines[0].startswith(f"retry_from_step {top}: done (dead -> ready); discarded steps: fan-in")
        assert "3 jobs below it retried" in lines[0]
        below = [(line.split()[0], line.split()[1].rstrip(":")) for line in lines[1:]]
        clock.advance((datetime.now(UTC) - clock.now()).total_seconds())  # the CLI's clock made them due
    else:
        res = await eng.operator(actor="ann").retry(top, note="INC-9", children=True)
        assert res.changed and res.action == "retry_from_step" and res.discarded == ("fan-in",)
        assert all(a.changed for a in res.also)
        below = [(a.action, a.job_id) for a in res.also]
    # The deepest first, and the branch from its wait, once its own dead leaf is ready again.
    assert below == [
        ("retry", ids["t1/branch/bad"]),
        ("retry_from_step", ids["t1/branch"]),
        ("retry", ids["t1/bad"]),
    ]
    (entry,) = [h for h in await driver.job_history(job_id=ids["t1/branch/bad"]) if h.kind == "retried"]
    assert entry.actor == "ann" and entry.note == f"INC-9 (with job {top})"

    assert await settle(eng, clock, top) is JobState.COMPLETED
    done = await eng.aget(top)
    assert done.result == ["t1/ok", "t1/bad", ["t1/branch/ok", "t1/branch/bad"]]
    # The fan-outs replayed: the same five jobs below, the completed ones never run again.
    assert {r.idempotency_key: r.id for r in await eng.operator().children(top)} == ids
    assert (await eng.aget(ids["t1/ok"])).finished_at == ok_finished


async def test_a_plain_retry_of_a_fan_in_replays_its_wait_and_leaves_the_dead_jobs_below_dead(
    eng: Engine, clock: FakeClock
) -> None:
    top, ids = await failed_tree(eng, clock, "t2")
    said = (await Introspector(eng).job(top)).next_retry
    assert said is not None  # what its detail says a retry would do
    assert said.note == "retried alone, its wait answers its 2 dead jobs again"
    FAULT["on"] = False
    res = await eng.operator(actor="ann").retry(top)
    assert res.changed and res.also == ()
    # Its wait answers the stored outcomes again.
    assert await settle(eng, clock, top) is JobState.DEAD
    assert (await eng.aget(ids["t2/bad"])).state is JobState.DEAD


async def test_a_job_below_that_cannot_be_retried_is_said_and_the_others_retried(eng: Engine, clock: FakeClock) -> None:
    top, ids = await failed_tree(eng, clock, "t3")
    holder = (await eng.aenqueue(leaf, {"k": "t3/bad"})).id  # a live job took the dead leaf's key
    res = await eng.operator(actor="ann").retry(top, children=True)
    by_id = {a.job_id: a for a in res.also}
    assert not by_id[ids["t3/bad"]].changed and holder in (by_id[ids["t3/bad"]].reason or "")
    assert by_id[ids["t3/branch"]].changed and by_id[ids["t3/branch/bad"]].changed
    assert res.changed and (await eng.aget(top)).state is JobState.READY  # from its wait: the branch is retried
    assert (await eng.aget(ids["t3/bad"])).state is JobState.DEAD


async def test_a_retry_with_children_cut_off_before_the_job_itself_is_finished_by_the_next_one(
    eng: Engine, driver: Driver, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    top, ids = await failed_tree(eng, clock, "t6")
    FAULT["on"] = False
    real = driver.job_retry_from_step

    async def lost_before_the_root(**kw: Any) -> Any:
        if kw["job_id"] == top:
            raise ConnectionError("the server closed the connection")
        return await real(**kw)

    monkeypatch.setattr(driver, "job_retry_from_step", lost_before_the_root)
    with pytest.raises(ConnectionError):
        await eng.operator(actor="ann").retry(top, children=True)
    assert (await eng.aget(top)).state is JobState.DEAD and (await eng.aget(ids["t6/bad"])).state is JobState.READY
    monkeypatch.setattr(driver, "job_retry_from_step", real)
    # Nothing below is dead now; the job's stored wait still says so, and that is what it is held to.
    res = await eng.operator(actor="ann").retry(top, children=True)
    assert res.also == () and res.action == "retry_from_step" and res.discarded == ("fan-in",)
    assert await settle(eng, clock, top) is JobState.COMPLETED


async def test_a_retry_with_more_jobs_below_than_the_limit_is_refused_before_anything_changes(
    eng: Engine, driver: Driver, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    top, ids = await failed_tree(eng, clock, "t4")
    monkeypatch.setattr(children, "MAX_CHILDREN", 4)
    with pytest.raises(JobsError) as exc:
        await eng.operator(actor="ann").retry(top, children=True)
    assert exc.value.code == X_INVALID_ARGUMENT and "a retry reaches at most 4" in exc.value.cause
    assert exc.value.fix.startswith("jobsctl retry --all --filter name=")  # the jobs below first, then
    assert exc.value.fix.endswith(f" && jobsctl retry {top} --from-step fan-in")  # its wait on them again
    rows = await driver.job_get_many(job_ids=[top, *ids.values()])
    assert sum(r.state is JobState.DEAD for r in rows) == 4


async def test_a_retry_with_children_of_a_job_that_is_not_dead_is_refused(eng: Engine) -> None:
    top = (await eng.aenqueue(root, {"k": "t5"})).id
    with pytest.raises(JobsError) as exc:
        await eng.operator(actor="ann").retry(top, children=True)
    assert exc.value.code == X_INVALID_STATE and "only a dead job can be retried" in exc.value.cause


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (("JOB", "--all", "--filter", "queue=x"), "--all takes a --filter, not an id or --from-step"),
        (("JOB", "--from-step", "fan-in"), "--children chooses the step itself"),
    ],
)
def test_jobs_retry_children_refuses_an_id_with_all_and_from_step_with_the_form_that_works(
    extra: tuple[str, ...], said: str
) -> None:
    r = cli("retry", *extra, "--children", "--dsn", "postgresql://nobody@localhost/none")
    assert r.exit_code != 0 and said in r.output
    assert "fix: jobsctl retry" in r.output


async def test_a_bulk_retrys_dry_run_counts_the_fan_ins_that_would_replay_a_dead_answer(
    eng: Engine, clock: FakeClock, driver: Driver, request: pytest.FixtureRequest
) -> None:
    top, ids = await failed_tree(eng, clock, "t7")
    op = eng.operator(actor="ann")
    plan = await op.plan("retry", JobFilter(state=JobState.DEAD))
    assert plan.matched == 4 and plan.replays == 2  # the root and its branch; not the two dead leaves
    assert plan.replay_example == max(top, ids["t7/branch"])  # the newest of them
    leaves = await op.plan("retry", JobFilter(name="rc.leaf"))
    assert (leaves.matched, leaves.replays, leaves.replay_example) == (2, 0, None)
    if isinstance(driver, PostgresDriver):
        no = await asyncio.to_thread(
            cli, "retry", "--all", "-f", "state=dead", "--dsn", request.getfixturevalue("pg_dsn"), input="n\n"
        )
        assert no.exit_code != 0 and "nothing changed" in no.output
        assert (
            "2 of them waited for jobs that did not complete: retried this way, each replays that answer" in no.output
        )
        assert "to run their waits again: jobsctl retry --all --children -f state=dead" in " ".join(no.output.split())
    # What it warns of: the plain bulk retry brings the leaves back, and the fan-ins, meeting their
    # stored answers again, die again.
    FAULT["on"] = False
    assert (await op.bulk("retry", JobFilter(state=JobState.DEAD))).changed == 4
    assert await settle(eng, clock, top) is JobState.DEAD
    assert (await eng.aget(ids["t7/bad"])).state is JobState.COMPLETED
    assert (await eng.aget(ids["t7/branch"])).state is JobState.DEAD


async def test_a_bulk_retry_with_children_brings_each_tree_back_newest_first_and_each_completes(
    eng: Engine, clock: FakeClock, driver: Driver, request: pytest.FixtureRequest
) -> None:
    trees = [await failed_tree(eng, clock, k) for k in ("t8", "t9")]
    assert (await eng.operator().plan("retry", JobFilter(state=JobState.DEAD))).matched == 8
    FAULT["on"] = False
    if isinstance(driver, PostgresDriver):
        dsn = request.getfixturevalue("pg_dsn")
        r = await asyncio.to_thread(
            cli, "retry", "--all", "--children", "-f", "state=dead", "--note", "INC-10", "--yes", "--dsn", dsn
        )
        assert r.exit_code == 0, r.output
        assert "each with the dead jobs below it, one job at a time, newest first" in r.stdout
        said = [line.split()[:2] for line in r.stdout.splitlines() if line.startswith(("retry ", "retry_from_step "))]
        answers = [(action, job_id.rstrip(":")) for action, job_id in said]
        clock.advance((datetime.now(UTC) - clock.now()).total_seconds())  # the CLI's clock made them due
    else:
        got = [
            res
            async for res in eng.operator(actor="ann").retry_all_with_children(
                JobFilter(state=JobState.DEAD), note="INC-10"
            )
        ]
        assert all(res.changed and res.also == () for res in got)  # each one's dead children came back before it
        answers = [(res.action, res.job_id) for res in got]
    expected = []
    for (top, ids), k in reversed(list(zip(trees, ("t8", "t9")))):  # newest first: leaves, then the fan-ins
        expected += [
            ("retry", ids[f"{k}/branch/bad"]),
            ("retry_from_step", ids[f"{k}/branch"]),
            ("retry", ids[f"{k}/bad"]),
            ("retry_from_step", top),
        ]
    assert answers == expected
    for top, ids in trees:
        assert await settle(eng, clock, top) is JobState.COMPLETED
        assert {r.idempotency_key: r.id for r in await eng.operator().children(top)} == ids  # no child twice
    (entry,) = [h for h in await driver.job_history(job_id=trees[0][1]["t8/bad"]) if h.kind == "retried"]
    assert entry.note == "INC-10"


async def test_a_bulk_retry_with_children_stopped_ends_before_the_next_job_and_leaves_the_rest_dead(
    eng: Engine, clock: FakeClock
) -> None:
    trees = [await failed_tree(eng, clock, k) for k in ("t11", "t12")]
    stop = asyncio.Event()
    got = []
    async for res in eng.operator().retry_all_with_children(JobFilter(state=JobState.DEAD), stop=stop):
        got.append(res)
        stop.set()  # after the first job's answer: its retry (and those below it) landed whole
    assert [(r.action, r.changed) for r in got] == [("retry", True)]
    assert got[0].job_id == trees[1][1]["t12/branch/bad"]  # the newest dead job
    dead = (await eng.operator().plan("retry", JobFilter(state=JobState.DEAD))).matched
    assert dead == 7  # every other dead job left as it was


async def timed_out(eng: Engine, clock: FakeClock, k: str) -> tuple[str, str]:
    """A fan-in dead because its wait timed out, its leaf never run meanwhile (no worker for its
    queue); answers the fan-in's id and the leaf's."""
    top = (await eng.aenqueue(patient, {"k": k})).id
    for _ in range(10):
        await arun_due(eng, [patient])
        if (await eng.aget(top)).state is JobState.DEAD:
            break
        clock.advance(20)
    assert (await eng.aget(top)).state is JobState.DEAD
    (below,) = await eng.operator().children(top)
    assert below.state is JobState.READY
    return top, below.id


async def test_a_plain_retry_of_a_fan_in_whose_wait_timed_out_times_out_again_at_once(
    eng: Engine, clock: FakeClock
) -> None:
    top, _ = await timed_out(eng, clock, "t10")
    said = (await Introspector(eng).job(top)).next_retry
    assert said is not None and said.note == "retried alone, its wait answers its timeout again at once"
    assert (await eng.operator().plan("retry", JobFilter(state=JobState.DEAD))).replays == 1
    assert (await eng.operator(actor="ann").retry(top)).changed
    await arun_due(eng, [patient])  # no time passes: the stored timeout is replayed
    assert (await eng.aget(top)).state is JobState.DEAD


async def test_a_retry_with_children_runs_a_timed_out_wait_again_with_its_timeout_counted_anew(
    eng: Engine, clock: FakeClock
) -> None:
    top, slow = await timed_out(eng, clock, "t11")
    res = await eng.operator(actor="ann").retry(top, children=True)
    assert (res.action, res.discarded, res.also) == ("retry_from_step", ("fan-in",), ())
    await arun_due(eng, [patient])  # the wait starts again: a minute from now, not from its first start
    assert (await eng.aget(top)).state is JobState.SUSPENDED
    assert await settle(eng, clock, top) is JobState.COMPLETED
    assert (await eng.aget(top)).result == ["t11/slow"]
    assert [r.id for r in await eng.operator().children(top)] == [slow]  # the fan-out replayed


async def test_a_bulk_retry_with_children_refuses_a_rate_that_is_not_positive_before_anything_changes(
    eng: Engine, clock: FakeClock, driver: Driver, request: pytest.FixtureRequest
) -> None:
    top, _ = await failed_tree(eng, clock, "t12")
    with pytest.raises(JobsError) as exc:
        [r async for r in eng.operator().retry_all_with_children(JobFilter(state=JobState.DEAD), per_second=0)]
    assert exc.value.code == X_INVALID_ARGUMENT and "per_second=0 must be a positive rate" in exc.value.cause
    if isinstance(driver, PostgresDriver):
        dsn = request.getfixturevalue("pg_dsn")
        args = ("retry", "--all", "--children", "-f", "state=dead", "--rate", "-1", "--yes", "--dsn", dsn)
        r = await asyncio.to_thread(cli, *args)
        assert r.exit_code != 0 and "X_INVALID_ARGUMENT" in r.output
        assert "fix: jobsctl retry --all --children --rate 50 -f state=dead" in r.output
    assert (await eng.operator().plan("retry", JobFilter(state=JobState.DEAD))).matched == 4  # none retried
    assert (await eng.aget(top)).state is JobState.DEAD


async def test_jobs_retry_all_children_json_answers_the_plan_and_each_jobs_answer(
    pg_dsn: str, clock: FakeClock
) -> None:
    eng = Engine(PostgresDriver(pg_dsn), clock=clock, ids=IdFactory(clock, seed=29))
    try:
        top, _ = await failed_tree(eng, clock, "t13")
        FAULT["on"] = False
        args = ("retry", "--all", "--children", "-f", "name=rc.root", "--yes", "--json", "--dsn", pg_dsn)
        r = await asyncio.to_thread(cli, *args)
        assert r.exit_code == 0, r.output
        doc = json.loads(r.stdout)
        assert (doc["plan"]["matched"], doc["plan"]["replays"], doc["plan"]["replay_example"]) == (1, 1, top)
        (res,) = doc["results"]
        assert (res["job_id"], res["action"], res["changed"]) == (top, "retry_from_step", True)
        assert [a["action"] for a in res["also"]] == ["retry", "retry_from_step", "retry"]
    finally:
        await eng.aclose()
