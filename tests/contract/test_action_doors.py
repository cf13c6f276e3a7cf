"""Each operator action means the same through its three doors, on every driver: the Python API
(engine.api.Engine), the CLI (engine/cli/ops.py) and the console's source (console/source.py),
which all call engine.actions' Operator. One rule each, pinned once per door."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from console.source import Source
from engine.api import Engine
from engine.cli import app
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import JobsError
from engine.ids import IdFactory
from engine.testing import claim_of as _claim_of
from engine.testing import make_job
from engine.types import Ack, JobRow, JobState, StoredStep, WorkerRegistration

runner = CliRunner()


class _Borrowed(Engine):
    """The test's engine, lent to a CLI command: the driver outlives the command."""

    async def aclose(self) -> None:
        return None


class Doors:
    def __init__(self, driver: Driver, clock: FakeClock, ids: IdFactory, monkeypatch: pytest.MonkeyPatch) -> None:
        self.driver, self.clock = driver, clock
        self.api = _Borrowed(driver, clock=clock, ids=ids)
        self.console = Source(self.api, actor="console:ann")
        monkeypatch.setattr("engine.api.connect", lambda dsn, **kw: self.api)
        monkeypatch.setenv("JOBS_ACTOR", "cli:bob")

    async def cli(self, *args: str) -> Result:
        # The command runs its own event loop, as `jobs` does: on a thread, beside the test's.
        return await asyncio.to_thread(runner.invoke, app, [*args, "--dsn", "memory://lent"])


@pytest.fixture
def doors(driver: Driver, clock: FakeClock, ids: IdFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Doors]:
    yield Doors(driver, clock, ids, monkeypatch)


async def refused(call: Any) -> JobsError:
    with pytest.raises(JobsError) as e:
        await call
    return e.value


async def completed_with_steps(driver: Driver, ids: IdFactory, clock: FakeClock, *, key: str) -> JobRow:
    row = await make_job(driver, ids, clock.now(), state=JobState.RUNNING, key=key)
    claim = _claim_of(row)
    t = datetime(2026, 1, 1, 12, tzinfo=UTC)
    for seq, name in enumerate(("fetch", "render")):
        assert await driver.step_save(claim=claim, step=StoredStep(row.id, name, seq, "run", "completed", 1, 1, t, t))
    assert await driver.job_ack_many(acks=[Ack(claim, {"ok": 1})], now=clock.now()) == [row.id]
    got = await driver.job_get(job_id=row.id)
    assert got is not None
    return got


async def test_a_retry_that_would_run_the_work_twice_raises_x_key_held_through_every_door(
    doors: Doors, driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    done = await completed_with_steps(driver, ids, clock, key="order:1")
    dead = await make_job(driver, ids, clock.now(), state=JobState.DEAD, key="order:2")
    live1 = await make_job(driver, ids, clock.now(), key="order:1")
    live2 = await make_job(driver, ids, clock.now(), key="order:2")
    for err in (
        await refused(doors.api.aretry_from_step(done.id, "render")),
        await refused(doors.console.retry_from_step(done.id, "render")),
    ):
        assert (err.code, err.fix) == ("X_KEY_HELD", f"jobsctl why {live1.id}")
    for err in (await refused(doors.api.operator().retry(dead.id)), await refused(doors.console.retry(dead.id))):
        assert (err.code, err.fix) == ("X_KEY_HELD", f"jobsctl why {live2.id}")
    r = await doors.cli("retry", done.id, "--from-step", "render")
    assert r.exit_code == 1 and "X_KEY_HELD" in r.stderr and f"jobsctl why {live1.id}" in r.stderr
    r = await doors.cli("retry", dead.id)
    assert r.exit_code == 1 and "X_KEY_HELD" in r.stderr
    # Refused: nothing changed, nothing audited.
    assert await driver.job_get(job_id=done.id) == done and await driver.job_get(job_id=dead.id) == dead
    assert await driver.job_history(job_id=done.id) == [] and await driver.job_history(job_id=dead.id) == []


async def test_bad_event_input_is_refused_before_anything_is_written_through_every_door(
    doors: Doors, driver: Driver, clock: FakeClock
) -> None:
    long_name = "e" * 201
    for call in (
        doors.api.asend_event(long_name, {}),
        doors.console.send_event(long_name, {}),
        doors.api.asend_event("invoice.paid", [1, 2]),  # type: ignore[arg-type]
        doors.console.send_event("invoice.paid", [1, 2]),
        doors.console.send_event("invoice.paid", {"at": clock}),  # not JSON
        doors.api.asend_event("invoice.paid", {}, tenant=""),
    ):
        assert (await refused(call)).code in ("X_INVALID_ARGUMENT", "X_INPUT_NOT_JSON")
    for args in ((long_name,), ("invoice.paid", "--payload", "[1, 2]"), ("invoice.paid", "--payload", "{nope")):
        r = await doors.cli("event", *args)
        assert r.exit_code == 1 and "X_INVALID_ARGUMENT" in r.stderr
    since = datetime(2000, 1, 1, tzinfo=UTC)
    found = await driver.event_find(
        job_id="019b796d-d600-7000-8000-000000000000",
        name="invoice.paid",
        tenant=None,
        match={},
        since=since,
        now=clock.now(),
    )
    assert found is None
    # A good one goes through each door, audited as that door's actor.
    assert (await doors.console.send_event("invoice.paid", {"invoice": 1})).name == "invoice.paid"
    r = await doors.cli("event", "invoice.paid", "--payload", '{"invoice": 2}', "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["name"] == "invoice.paid"


async def test_i25_a_short_id_resolves_to_the_one_job_of_the_scope_through_every_door(
    doors: Doors, driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    a = await make_job(driver, ids, clock.now(), state=JobState.DEAD)
    b = await make_job(driver, ids, clock.now())
    c = await make_job(driver, ids, clock.now(), tenant="acme")
    tail = a.id[-12:]  # the console shows the tail: a UUIDv7's head is its time, shared by a batch
    head = a.id.replace("-", "")[:10]  # the millisecond a, b and c were minted in
    assert all(j.id.replace("-", "").startswith(head) for j in (a, b, c))

    assert (await doors.api.aget(tail)).id == a.id
    assert await doors.console.resolve_job(tail) == a.id
    assert (await doors.console.job(tail.upper())).job.id == a.id
    r = await doors.cli("show", tail, "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["job"]["id"] == a.id
    r = await doors.cli("why", tail, "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["target"] == a.id
    r = await doors.cli("why", "default", "--json")  # a queue name is still a queue
    assert r.exit_code == 0 and json.loads(r.stdout)["subject"] == "queue"
    # A head long enough to hold the id's counter is unique too, and any id-taking command takes it.
    r = await doors.cli("discard", a.id.replace("-", "")[:16], "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["job_id"] == a.id

    # Ambiguous: a coded error naming every candidate; nothing changes.
    for err in (
        await refused(doors.api.acancel(head)),
        await refused(doors.console.resolve_job(head)),
    ):
        assert err.code == "X_AMBIGUOUS_ID" and b.id in err.cause and c.id in err.cause
        assert sorted(err.meta["candidates"]) == sorted([b.id, c.id])
    r = await doors.cli("cancel", head)
    assert r.exit_code == 1 and "X_AMBIGUOUS_ID" in r.stderr and b.id in r.stderr
    assert (await driver.job_get(job_id=b.id)) == b

    # A tenant's scope never counts another tenant's job, not even as a candidate (I25).
    assert (await doors.api.aget(head, tenant="acme")).id == c.id
    err = await refused(doors.api.operator(tenant="globex").cancel(c.id[-12:]))
    assert err.code == "X_NOT_FOUND" and err.cause == f"no job has id {c.id[-12:]} for tenant 'globex'"

    # No match is the one "no job has id" error; a fragment too short to be one is malformed.
    for err in (await refused(doors.api.aget("abcdef123456")), await refused(doors.console.job("abcdef123456"))):
        assert (err.code, err.cause) == ("X_NOT_FOUND", "no job has id abcdef123456")
    r = await doors.cli("show", "abcdef123456")
    assert r.exit_code == 3 and "no job has id abcdef123456" in r.stderr
    for bad in ("abc12", "not-hex-at-all", ""):
        assert (await refused(doors.api.aget(bad))).code == "X_MALFORMED_ID"


async def test_a_queue_nothing_names_is_not_paused_by_a_typo_through_any_door(
    doors: Doors, driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    await make_job(driver, ids, clock.now(), queue="emails")
    for err in (await refused(doors.api.operator().pause("emials")), await refused(doors.console.pause("emials"))):
        assert (
            err.code == "X_UNKNOWN_QUEUE" and "did you mean 'emails'" in err.cause and err.fix == "jobsctl pause emails"
        )
    r = await doors.cli("pause", "emials")
    assert r.exit_code == 1 and "X_UNKNOWN_QUEUE" in r.stderr and "did you mean 'emails'" in r.stderr
    assert "emials" not in await driver.queue_names_known()

    # --create pauses a queue before its first job; resuming it leaves nothing behind.
    r = await doors.cli("pause", "reports", "--create", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["by"] == "cli:bob"
    assert "reports" in await driver.queue_names_known()
    assert (await doors.console.pause("reports")).changed is False  # known now: a clear no-op
    assert (await doors.console.resume("reports")).changed
    assert "reports" not in await driver.queue_names_known()
    assert [q.name for q in (await doors.console.queues()).queues] == ["emails"]
    # A queue a worker serves is known though no job row names it.
    await driver.worker_register(
        worker=WorkerRegistration(id="w-1", host="h", pid=1, queues=("billing",), concurrency=1), now=clock.now()
    )
    assert (await doors.api.operator(actor="ann").pause("billing")).by == "ann"


async def test_discarding_a_dead_letter_deletes_it_and_keeps_the_audit_through_every_door(
    doors: Doors, driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    d1, d2, d3 = [await make_job(driver, ids, clock.now(), state=JobState.DEAD, tenant="acme") for _ in range(3)]
    ready = await make_job(driver, ids, clock.now())
    res = await doors.api.operator(actor="ann").discard(d1.id, note="INC-9 bad card")
    assert (res.action, res.changed, res.previous) == ("discard", True, JobState.DEAD)
    assert (await doors.console.discard(d2.id)).changed
    r = await doors.cli("discard", d3.id, "--note", "INC-9")
    assert r.exit_code == 0 and "discard" in r.stdout
    for job, actor, note in ((d1, "ann", "INC-9 bad card"), (d2, "console:ann", None), (d3, "cli:bob", "INC-9")):
        assert await driver.job_get(job_id=job.id) is None
        (h,) = await driver.job_history(job_id=job.id)
        assert (h.kind, h.actor, h.note, h.at) == ("discarded", actor, note, clock.now())
        assert (h.data["name"], h.data["tenant"], h.data["error_code"]) == (job.name, "acme", "X_BOOM")
        err = await refused(doors.api.aget(job.id))
        assert err.code == "X_NOT_FOUND" and err.cause.startswith(
            f"no job has id {job.id}: it was discarded by {actor}"
        )
    # Another tenant's scope learns nothing of it (I25).
    err = await refused(doors.api.aget(d1.id, tenant="globex"))
    assert err.cause == f"no job has id {d1.id} for tenant 'globex'"
    # Only a dead letter: a live job is refused, and the fix names cancel.
    for err in (await refused(doors.api.operator().discard(ready.id)), await refused(doors.console.discard(ready.id))):
        assert (err.code, err.fix) == ("X_INVALID_STATE", f"jobsctl cancel {ready.id}")
    assert await driver.job_get(job_id=ready.id) == ready


async def test_a_bulk_discard_plans_then_applies_and_read_only_refuses_it(
    doors: Doors, driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    dead = [await make_job(driver, ids, clock.now(), state=JobState.DEAD, tenant=t) for t in ("acme", "acme", None)]
    await make_job(driver, ids, clock.now())  # live: never a bulk discard's
    ro = Source(doors.api, read_only=True)
    plan = await ro.plan("discard", doors_filter("code=X_BOOM"))  # the dry run is a read
    assert (plan.matched, plan.would_change, plan.deduped) == (3, 3, 0)
    assert {(g.tenant, g.count) for g in plan.groups} == {("acme", 2), (None, 1)}
    for call in (ro.bulk("discard", doors_filter("")), ro.discard(dead[0].id)):
        assert (await refused(call)).code == "X_READ_ONLY"
    assert (await refused(doors.api.operator(read_only=True).bulk("discard"))).code == "X_READ_ONLY"
    assert (await refused(doors.api.operator().plan("discard", doors_filter("state=ready")))).code == "X_INVALID_STATE"
    r = await doors.cli("discard", "--all", "-f", "tenant=acme", "--yes", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["result"]["changed"] == 2
    res = await doors.console.bulk("discard", doors_filter(""), note="INC-10")
    assert (res.changed, res.skipped) == (1, 0)
    for job in dead:
        assert await driver.job_get(job_id=job.id) is None
        (h,) = await driver.job_history(job_id=job.id)
        assert h.kind == "discarded" and "bulk" in h.data
    assert (await doors.api.operator().plan("discard")).matched == 0


def doors_filter(text: str):  # type: ignore[no-untyped-def]
    from engine.introspect import parse_filter

    return parse_filter(text)


async def test_i25_id_addressed_actions_refuse_another_tenants_job_through_the_api_and_the_cli(
    doors: Doors, driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    dead = await make_job(driver, ids, clock.now(), state=JobState.DEAD, tenant="acme")
    live = await make_job(driver, ids, clock.now(), tenant="acme")
    for call in (
        doors.api.acancel(live.id, tenant="globex"),
        doors.api.aretry_from_step(dead.id, "charge", tenant="globex"),
    ):
        err = await refused(call)
        assert err.code == "X_NOT_FOUND" and "globex" in err.cause
    for args in (("cancel", live.id), ("retry", dead.id), ("discard", dead.id), ("show", dead.id)):
        r = await doors.cli(*args, "--tenant", "globex")
        assert r.exit_code != 0 and "X_NOT_FOUND" in r.stderr and "globex" in r.stderr, (args, r.stderr)
    assert await driver.job_get(job_id=live.id) == live and await driver.job_get(job_id=dead.id) == dead
    assert await driver.job_history(job_id=dead.id) == []
