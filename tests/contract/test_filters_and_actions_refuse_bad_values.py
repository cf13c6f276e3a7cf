"""A filter, a view's options and an action's flags and notes of the wrong kind are refused with
X_INVALID_ARGUMENT, the same from every driver, before anything is read or changed."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from engine.actions import Operator
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import JobsError
from engine.ids import IdFactory
from engine.introspect import Introspector, make_filter
from engine.projections import NULL, JobFilter
from engine.testing import make_job
from engine.types import JobState, WorkerRegistration


def refused(make: Callable[[], object]) -> JobsError:
    with pytest.raises(JobsError) as e:
        make()
    assert e.value.code == "X_INVALID_ARGUMENT", e.value
    return e.value


async def refused_async(call: Any) -> JobsError:
    with pytest.raises(JobsError) as e:
        await call
    assert e.value.code == "X_INVALID_ARGUMENT", e.value
    return e.value


def op(driver: Driver, clock: FakeClock, **kw: Any) -> Operator:
    return Operator(driver, clock=clock, actor="alice", **kw)


# --- JobFilter ----------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [math.nan, math.inf, {1}, object(), {"a": [math.nan]}])
async def test_a_filter_input_value_that_is_not_json_is_refused_before_any_driver_sees_it(
    driver: Driver, ids: IdFactory, clock: FakeClock, bad: object
) -> None:
    job = await make_job(driver, ids, clock.now(), input={"x": 1})
    for make in (lambda: make_filter(input_fields={"x": bad}), lambda: JobFilter(input_fields=(("x", bad),))):
        err = refused(make)
        assert "input_fields" in err.cause and "not JSON" in err.cause
        assert err.fix == "make_filter(input_fields={'invoice_id': 42})"
    assert await driver.job_get(job_id=job.id) == job


async def test_a_filter_input_value_matches_as_jsonb_holds_it_a_tuple_as_a_list_a_number_key_as_text(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    job = await make_job(driver, ids, clock.now(), input={"tags": ["a", "b"], "by": {"1": "x"}})
    intro = Introspector(driver, clock=clock)
    for where in (JobFilter(input_fields=(("tags", ("a",)),)), JobFilter(input_fields=(("by", {1: "x"}),))):
        assert where.input_fields[0][1] in (["a"], {"1": "x"})
        assert [j.id for j in (await intro.jobs(where)).items] == [job.id]


@pytest.mark.parametrize("bad", [{"x": 5}, [("x", 5)], (("x",),), ((1, 5),), (["x", 5],), "x=5"])
def test_a_filter_whose_input_fields_are_not_a_tuple_of_key_value_pairs_is_refused(bad: object) -> None:
    err = refused(lambda: JobFilter(input_fields=bad))  # type: ignore[arg-type]
    assert repr(bad) in err.cause and "(str, JSON value) pairs" in err.cause


@pytest.mark.parametrize("key", ["since", "until"])
@pytest.mark.parametrize("bad", [datetime(2020, 1, 1), "2020-01-01", 1577836800])
def test_a_filter_built_directly_refuses_a_since_or_until_that_is_not_a_datetime_with_a_zone(
    key: str, bad: object
) -> None:
    err = refused(lambda: JobFilter(**{key: bad}))
    assert key in err.cause and repr(bad) in err.cause and "time zone" in err.cause
    assert err.fix == f"{key}=datetime(2026, 1, 1, tzinfo=UTC)"
    assert JobFilter(**{key: datetime(2020, 1, 1, tzinfo=UTC)}) != JobFilter()


@pytest.mark.parametrize("key", ["queue", "name", "tenant", "error_code", "search"])
@pytest.mark.parametrize("bad", [5, ["x"], b"x", True])
def test_a_filter_text_field_that_is_not_a_str_is_refused_naming_it(key: str, bad: object) -> None:
    err = refused(lambda: JobFilter(**{key: bad}))
    kinds = "a str, NULL or None" if key == "error_code" else "a str or None"  # NULL: the rows without a code
    assert err.cause == f"JobFilter({key}={bad!r}): not {kinds}"
    assert err.fix == f'JobFilter({key}="billing")'


@pytest.mark.parametrize("key", ["queue", "name", "tenant", "search", "state"])
def test_null_is_a_filter_value_of_the_error_code_and_the_stop_reason_only(key: str) -> None:
    err = refused(lambda: JobFilter(**{key: NULL}))
    assert err.cause.startswith(f"JobFilter({key}={NULL!r}): not ")
    assert JobFilter(error_code=NULL, stop_reason=NULL) != JobFilter()


@pytest.mark.parametrize(
    "kw",
    [
        {"search": 5},
        {"queue": 0},
        {"name": []},
        {"tenant": False},
        {"input_fields": 5},
        {"input_fields": [("x", 1)]},
        {"input_fields": {1: 2}},
    ],
)
async def test_make_filter_refuses_a_value_of_the_wrong_kind_rather_than_reading_it_as_not_filtered(
    driver: Driver, ids: IdFactory, clock: FakeClock, kw: dict[str, object]
) -> None:
    job = await make_job(driver, ids, clock.now(), queue="emails")
    refused(lambda: make_filter(**kw))  # a bulk cancel of "queue=0" would otherwise cancel every job
    assert await driver.job_get(job_id=job.id) == job
    assert make_filter(queue="", search="  ") == JobFilter()  # empty text still means 'not filtered'


# --- Introspector options -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "kw",
    [
        {"stale_after": math.nan},
        {"stale_after": -1},
        {"stale_after": 0},
        {"stale_after": math.inf},
        {"stale_after": "x"},
        {"stale_after": True},
        {"budget": math.nan},
        {"count_cap": True},
        {"count_cap": 0},
        {"count_cap": 1.5},
        {"page_count_cap": -5},
        {"page_count_cap": True},
        {"page_count_cap": "10"},
        {"tenant": ""},
        {"tenant": 5},
    ],
)
def test_an_introspector_option_out_of_range_or_of_the_wrong_kind_is_refused_naming_it(
    driver: Driver, clock: FakeClock, kw: dict[str, object]
) -> None:
    ((key, bad),) = kw.items()
    err = refused(lambda: Introspector(driver, clock=clock, **kw))
    assert f"{key}={bad!r}" in err.cause
    assert "=" in err.fix and "\n" not in err.fix


async def test_a_positive_stale_after_still_counts_a_fresh_worker_as_live(driver: Driver, clock: FakeClock) -> None:
    await driver.worker_register(
        worker=WorkerRegistration(id="w-1", host="h", pid=1, queues=("default",), concurrency=2), now=clock.now()
    )  # type: ignore[attr-defined]
    await make_job(driver, IdFactory(clock, seed=3), clock.now())
    (q,) = (await Introspector(driver, clock=clock, stale_after=0.5, page_count_cap=1).queues()).queues
    assert q.workers == 1


# --- Operator -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kw", [{"read_only": "no"}, {"read_only": 0}, {"read_only": None}, {"tenant": ""}, {"tenant": 5}]
)
def test_an_operator_built_with_a_flag_that_is_not_a_bool_or_an_empty_tenant_is_refused(
    driver: Driver, clock: FakeClock, kw: dict[str, object]
) -> None:
    ((key, bad),) = kw.items()
    err = refused(lambda: op(driver, clock, **kw))
    assert f"{key}={bad!r}" in err.cause
    if key == "read_only":
        assert err.fix == "read_only=True"


async def test_a_cancel_with_children_given_as_a_word_is_refused_and_cancels_nothing(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    job = await make_job(driver, ids, clock.now())
    err = await refused_async(op(driver, clock).cancel(job.id, children="no"))  # type: ignore[arg-type]
    assert err.cause == "children='no' is not True or False" and err.fix == "children=True"
    assert await driver.job_get(job_id=job.id) == job
    assert await driver.job_history(job_id=job.id) == []


async def test_a_pause_with_create_given_as_a_word_is_refused_and_pauses_nothing(
    driver: Driver, clock: FakeClock
) -> None:
    err = await refused_async(op(driver, clock).pause("newq", create="no"))  # type: ignore[arg-type]
    assert err.fix == "create=True"
    assert "newq" not in await driver.queue_names_known()
    assert not (await driver.queue_get(queue="newq")).paused  # type: ignore[attr-defined]


async def test_a_note_that_is_not_a_str_is_refused_by_every_action_and_changes_nothing(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    dead = await make_job(driver, ids, clock.now(), state=JobState.DEAD, queue="emails")
    ready = await make_job(driver, ids, clock.now(), queue="emails")
    o = op(driver, clock)
    for call in (
        o.retry(dead.id, note=5),  # type: ignore[arg-type]
        o.retry_from_step(dead.id, "s", note=5),  # type: ignore[arg-type]
        o.cancel(ready.id, note=["x"]),  # type: ignore[arg-type]
        o.discard(dead.id, note=5),  # type: ignore[arg-type]
        o.bulk("cancel", JobFilter(queue="emails"), note=5),  # type: ignore[arg-type]
        o.pause("emails", note=5),  # type: ignore[arg-type]
        o.drain_worker("w-1", note=5),  # type: ignore[arg-type]
    ):
        err = await refused_async(call)
        assert "note=" in err.cause and err.fix == "note='INC-7: smtp fixed'"
    await refused_async(anext(o.retry_all_with_children(note=5)))  # type: ignore[arg-type]
    assert await driver.job_get(job_id=dead.id) == dead and await driver.job_get(job_id=ready.id) == ready
    assert await driver.job_history(job_id=dead.id) == [] and await driver.job_history(job_id=ready.id) == []
    assert not (await driver.queue_get(queue="emails")).paused  # type: ignore[attr-defined]


async def test_an_action_or_a_read_asked_for_an_empty_or_non_text_tenant_is_refused(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    ready = await make_job(driver, ids, clock.now(), tenant="acme")
    for bad in ("", 5, " acme"):
        await refused_async(op(driver, clock).cancel(ready.id, tenant=bad))  # type: ignore[arg-type]
        await refused_async(Introspector(driver, clock=clock).job(ready.id, tenant=bad))  # type: ignore[arg-type]
    assert await driver.job_get(job_id=ready.id) == ready


# The arguments each public action is called with, by name, to reach its flag and note checks.
_ARGS: dict[str, Any] = {"step": "s", "queue": "emails", "action": "cancel", "worker_id": "w-1", "name": "evt"}


async def test_every_bool_flag_and_note_of_every_operator_action_refuses_a_value_of_the_wrong_kind(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    dead = await make_job(driver, ids, clock.now(), state=JobState.DEAD, queue="emails")
    o = op(driver, clock)
    checked: list[str] = []
    for method_name, method in inspect.getmembers(Operator, inspect.isfunction):
        if method_name.startswith("_"):
            continue
        params = inspect.signature(method).parameters.values()
        positional = [
            dead.id if p.name == "job_id" else _ARGS[p.name]
            for p in params
            if p.name != "self" and p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty
        ]
        wrong: dict[str, object] = {p.name: "no" for p in params if p.annotation == "bool"}
        wrong |= {p.name: 5 for p in params if p.name == "note"}
        for key, bad in wrong.items():
            call = getattr(o, method_name)(*positional, **{key: bad})
            err = await refused_async(anext(call) if inspect.isasyncgen(call) else call)
            assert f"{key}={bad!r}" in err.cause
            checked.append(f"{method_name}({key}=)")
    assert {"retry(children=)", "cancel(children=)", "pause(create=)", "bulk(note=)", "drain_worker(note=)"} <= set(
        checked
    )
    assert await driver.job_get(job_id=dead.id) == dead and await driver.job_history(job_id=dead.id) == []
