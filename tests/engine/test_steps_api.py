"""The Engine's step actions: send_event / asend_event and retry_from_step / aretry_from_step, sync
and async, with bad input refused before anything is written."""

from __future__ import annotations

import pytest

from engine import FakeClock, JobsError, JobState, connect
from engine.errors import X_INVALID_ARGUMENT, X_MALFORMED_ID, X_NOT_FOUND, X_UNKNOWN_STEP
from engine.ids import IdFactory
from engine.runtime.signal import RunSignal
from engine.runtime.steps import StepApi
from engine.types import Ack, NewJob


async def _completed_job_with_steps(eng, clock: FakeClock, *, tenant: str | None = None) -> str:  # type: ignore[no-untyped-def]
    jid = eng.ids.new()
    await eng.driver.job_enqueue(
        jobs=[
            NewJob(id=jid, name="etl", queue="q", idempotency_key=f"k:{jid}", input={}, max_attempts=3, tenant=tenant)
        ],
        now=clock.now(),
    )
    (cj,) = (await eng.driver.worker_claim(queues=["q"], limit=1, worker="w", now=clock.now(), lease_seconds=30)).jobs
    api = StepApi(
        driver=eng.driver, claim=cj.claim, row=cj.row, clock=clock, signal=RunSignal(), step_timeout=None, event_poll=30
    )
    for name in ("extract", "load"):
        await api.run(name, lambda name=name: name)
    assert await eng.driver.job_ack_many(acks=[Ack(cj.claim, "ok")], now=clock.now()) == [jid]
    return str(jid)


async def test_asend_event_stores_it_and_answers_what_it_woke(clock: FakeClock) -> None:
    eng = connect("memory://", clock=clock, ids=IdFactory(clock, seed=3))
    sent = await eng.asend_event("invoice.paid", {"invoice": 42}, tenant="acme", actor="stripe")
    assert (sent.name, sent.tenant, sent.sent_at, sent.woken) == ("invoice.paid", "acme", clock.now(), 0)
    found = await eng.driver.event_find(
        job_id=eng.ids.new(),
        name="invoice.paid",
        tenant="acme",
        match={"invoice": 42},
        since=clock.now(),
        now=clock.now(),
    )
    assert found is not None and (found.id, found.sent_by, found.payload) == (sent.id, "stripe", {"invoice": 42})


def test_send_event_sync_and_bad_input(clock: FakeClock) -> None:
    eng = connect("memory://", clock=clock)
    try:
        assert eng.send_event("ping").woken == 0  # no payload is the empty object
        for args, kw in (
            (("",), {}),
            (("ping", [1, 2]), {}),
            (("ping", {"at": clock}), {}),
            (("ping", {}), {"tenant": ""}),
        ):
            with pytest.raises(JobsError) as err:
                eng.send_event(*args, **kw)
            assert err.value.code in (X_INVALID_ARGUMENT, "X_INPUT_NOT_JSON") and err.value.fix
        assert len(eng.driver.state.events) == 1  # type: ignore[attr-defined]
    finally:
        eng.close()


async def test_aretry_from_step_reruns_and_refuses_clearly(clock: FakeClock) -> None:
    eng = connect("memory://", clock=clock, ids=IdFactory(clock, seed=4))
    jid = await _completed_job_with_steps(eng, clock, tenant="acme")
    with pytest.raises(JobsError) as err:
        await eng.aretry_from_step(jid, "lod", tenant="acme")
    assert err.value.code == X_UNKNOWN_STEP and "'extract', 'load'" in err.value.cause
    with pytest.raises(JobsError) as err:
        await eng.aretry_from_step(jid, "load", tenant="globex")
    assert err.value.code == X_NOT_FOUND
    with pytest.raises(JobsError) as err:
        await eng.aretry_from_step("not-a-uuid", "load")
    assert err.value.code == X_MALFORMED_ID
    with pytest.raises(JobsError) as err:
        await eng.aretry_from_step(jid, "")
    assert err.value.code == X_INVALID_ARGUMENT
    assert (await eng.aget(jid)).state is JobState.COMPLETED  # nothing changed

    res = await eng.aretry_from_step(jid, "load", tenant="acme", actor="ann", note="INC-7")
    assert (res.action, res.changed, res.discarded) == ("retry_from_step", True, ("load",))
    assert (await eng.aget(jid)).state is JobState.READY


def test_retry_from_step_sync(clock: FakeClock) -> None:
    eng = connect("memory://", clock=clock)
    try:
        jid = eng._bridge.run(_completed_job_with_steps(eng, clock))
        assert eng.retry_from_step(jid, "extract", actor="ops").discarded == ("extract", "load")
        assert eng.get(jid).state is JobState.READY
    finally:
        eng.close()
