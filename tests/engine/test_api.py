"""The Engine facade: sync and async enqueue, batches, and bad input that loses nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest

from engine import Enqueue, FakeClock, JobsError, JobState, connect, job
from engine.drivers.postgres.dsn import safe_dsn
from engine.ids import IdFactory


@job(name="send_email", queue="mail", idempotency_key=lambda inp: f"user:{inp['user_id']}")
async def send_email(ctx, inp):  # type: ignore[no-untyped-def]
    return None


@job(name="provision_workspace", idempotency_key=lambda inp: f"user:{inp['user_id']}")
def provision_workspace(ctx, inp):  # type: ignore[no-untyped-def]
    return None


def test_sync_enqueue_answers_id_and_deduped(clock: FakeClock) -> None:
    eng = connect("memory://", clock=clock, ids=IdFactory(clock, seed=1))
    try:
        a = eng.enqueue(send_email, {"user_id": 7})
        b = eng.enqueue(send_email, {"user_id": 7})
        c = eng.enqueue(provision_workspace, {"user_id": 7})
        assert not a.deduped and b.deduped and b.id == a.id
        assert not c.deduped and c.id != a.id
        row = eng.get(a.id)
        assert (row.queue, row.idempotency_key, row.state, row.max_attempts) == ("mail", "user:7", JobState.READY, 3)
    finally:
        eng.close()


async def test_async_batch_enqueue_is_one_call_with_delay_and_tenant(clock: FakeClock) -> None:
    eng = connect("memory://", clock=clock)
    rs = await eng.aenqueue_many(
        [
            Enqueue(send_email, {"user_id": 1}, tenant="acme"),
            Enqueue(send_email, {"user_id": 1}, tenant="globex", delay=60),
        ]
    )
    assert [r.deduped for r in rs] == [False, False]
    later = await eng.aget(rs[1].id)
    assert later.state is JobState.DELAYED and later.run_at == clock.now() + timedelta(seconds=60)
    assert later.tenant == "globex"


async def test_ids_are_uuid7_and_time_ordered(clock: FakeClock) -> None:
    eng = connect("memory://", clock=clock)
    first = await eng.aenqueue(send_email, {"user_id": 1})
    clock.advance(0.001)
    second = await eng.aenqueue(send_email, {"user_id": 2})
    assert first.id[14] == "7" and first.id < second.id


async def test_an_unserialisable_input_is_refused_and_nothing_is_written(clock: FakeClock) -> None:
    eng = connect("memory://", clock=clock)
    with pytest.raises(JobsError) as e:
        await eng.aenqueue_many([Enqueue(send_email, {"user_id": 1}), Enqueue(send_email, {"user_id": object()})])
    assert e.value.code == "X_INPUT_NOT_JSON" and "send_email" in e.value.cause
    assert eng.driver.state.jobs == {}  # type: ignore[attr-defined]
    with pytest.raises(JobsError) as nan:
        await eng.aenqueue(send_email, {"user_id": float("nan")})
    assert nan.value.code == "X_INPUT_NOT_JSON"


async def test_an_input_postgres_cannot_store_is_refused_before_the_database(pg_dsn: str) -> None:
    # A NUL character is valid JSON that jsonb refuses: a clear error from the engine, not the
    # server's UntranslatableCharacter, and nothing of the batch written.
    eng = connect(pg_dsn)
    try:
        with pytest.raises(JobsError) as e:
            await eng.aenqueue_many(
                [Enqueue(send_email, {"user_id": 1}), Enqueue(send_email, {"user_id": 2, "note": "a\x00b"})]
            )
        assert e.value.code == "X_INPUT_NOT_JSON" and "NUL" in e.value.cause
        assert (await eng.aenqueue(send_email, {"user_id": 1})).deduped is False  # the first row was not written
    finally:
        await eng.aclose()


@pytest.mark.parametrize(
    "kw, code",
    [
        ({"delay": -1}, "X_INVALID_ARGUMENT"),
        ({"tenant": ""}, "X_INVALID_ARGUMENT"),
    ],
)
async def test_bad_enqueue_arguments_are_refused(clock: FakeClock, kw: dict, code: str) -> None:  # type: ignore[type-arg]
    eng = connect("memory://", clock=clock)
    with pytest.raises(JobsError) as e:
        await eng.aenqueue(send_email, {"user_id": 1}, **kw)
    assert e.value.code == code and e.value.fix


async def test_a_malformed_or_unknown_id_is_a_clear_error(clock: FakeClock) -> None:
    eng = connect("memory://", clock=clock)
    with pytest.raises(JobsError) as bad:
        await eng.aget("not-a-uuid")
    assert bad.value.code == "X_MALFORMED_ID"
    with pytest.raises(JobsError) as missing:
        await eng.acancel("019b796d-d600-7022-b63c-5ab791b7584a")
    assert missing.value.code == "X_NOT_FOUND"


async def test_a_dsn_that_does_not_connect_names_host_and_database_never_the_password() -> None:
    eng = connect("postgresql://app:hunter2@127.0.0.1:1/appdb?connect_timeout=2")
    with pytest.raises(JobsError) as e:
        await eng.aenqueue(send_email, {"user_id": 1})
    assert e.value.code == "X_DB_UNREACHABLE"
    assert "appdb" in e.value.cause and "127.0.0.1:1" in e.value.cause
    assert "hunter2" not in e.value.cause + e.value.fix + str(e.value)
    await eng.aclose()


def test_a_malformed_dsn_is_refused_without_echoing_the_password() -> None:
    with pytest.raises(JobsError) as e:
        connect("host=db password=hunter2 bogus_option=1")
    assert e.value.code == "X_DSN_INVALID" and "hunter2" not in str(e.value)
    assert "hunter2" not in safe_dsn("postgresql://app:hunter2@db/app")


def test_a_shown_dsn_names_its_database_and_nothing_the_reader_did_not_write() -> None:
    """What messages show of a DSN: its service, user, host, port and dbname. Not the password
    (I25), nor the connect_timeout and statement_timeout the CLI adds to every DSN it opens."""
    from engine.drivers.postgres.dsn import with_timeouts

    typed = "postgresql://app:hunter2@db.internal:6432/orders?sslmode=require"
    opened = with_timeouts(typed, connect_timeout=5, statement_timeout_ms=10000)
    assert "statement_timeout" in opened and "connect_timeout" in opened
    assert safe_dsn(opened) == "user=app host=db.internal port=6432 dbname=orders"
    assert safe_dsn("service=prod") == "service=prod"


def test_a_port_that_is_not_a_port_number_is_x_dsn_invalid_before_any_connection() -> None:
    # libpq parses these and fails only when connecting, as an unreachable server after a DNS lookup.
    for dsn in (
        "postgresql://app:hunter2@db.example:notaport/app",
        "postgresql://app@db.example/app?port=99999",
        "host=db.example password=hunter2 port=x5432",
    ):
        with pytest.raises(JobsError) as e:
            connect(dsn)
        assert e.value.code == "X_DSN_INVALID" and "is not a port number" in e.value.cause
        assert "hunter2" not in str(e.value) and "install" not in e.value.fix


async def test_a_schema_that_is_not_installed_says_jobs_install(pg_server_empty_dsn: str) -> None:
    eng = connect(pg_server_empty_dsn)
    with pytest.raises(JobsError) as e:
        await eng.aenqueue(send_email, {"user_id": 1})
    assert e.value.code == "X_SCHEMA_MISSING" and e.value.fix.startswith("jobsctl migrate")
    await eng.aclose()


async def test_a_run_at_with_no_offset_or_outside_what_a_utc_datetime_holds_is_refused(clock: FakeClock) -> None:
    from datetime import datetime, timezone, tzinfo

    class NoOffset(tzinfo):  # aware in form, naive in fact: astimezone would read it as local time
        def utcoffset(self, dt: datetime | None) -> None:
            return None

    eng = connect("memory://", clock=clock)
    for run_at, said in (
        (datetime(2030, 1, 1, tzinfo=NoOffset()), "is not a datetime with a time zone"),
        (datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-14))), "outside what a UTC datetime holds"),
        (datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=14))), "outside what a UTC datetime holds"),
    ):
        with pytest.raises(JobsError) as err:
            await eng.aenqueue(send_email, {"user_id": 1}, run_at=run_at)
        assert err.value.code == "X_INVALID_ARGUMENT" and said in err.value.cause


async def test_a_bad_item_of_a_batch_is_named_by_its_place_and_a_batch_that_is_not_iterable_is_refused(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine import api

    monkeypatch.setattr(api, "CHUNK", 2)  # the bad item in the second chunk, checked while the first goes out
    eng = connect("memory://", clock=clock)
    specs = [Enqueue(send_email, {"user_id": u}) for u in range(3)] + [Enqueue(send_email, {"user_id": float("nan")})]
    with pytest.raises(JobsError) as err:
        await eng.aenqueue_many(specs)
    assert err.value.code == "X_INPUT_NOT_JSON" and err.value.cause.startswith("item 4 of 4: ")
    with pytest.raises(JobsError) as one:
        await eng.aenqueue_many(specs[3:])
    assert not one.value.cause.startswith("item")  # a batch of one has no place to name
    with pytest.raises(JobsError) as none:
        await eng.aenqueue_many(None)  # type: ignore[arg-type]
    assert none.value.code == "X_INVALID_ARGUMENT" and "Enqueue(send_email" in none.value.fix
    assert eng.driver.state.jobs == {}  # type: ignore[attr-defined]


async def test_a_bad_argument_a_handler_gives_the_engine_dead_letters_the_job_at_once_terminal(
    clock: FakeClock,
) -> None:
    from engine.testing import arun_due

    @job(name="api.sleeps_nan", queue="nan", idempotency_key=lambda inp: "k")
    async def sleeps_nan(ctx, inp):  # type: ignore[no-untyped-def]
        await ctx.step.sleep("nap", float("nan"))

    eng = connect("memory://", clock=clock)
    res = await eng.aenqueue(sleeps_nan, {})
    await arun_due(eng, sleeps_nan)
    row = await eng.aget(res.id)
    assert (row.state, row.stop_reason, row.attempt, row.error_code) == (
        JobState.DEAD,
        "terminal",
        1,
        "X_INVALID_ARGUMENT",
    )


def test_an_embedded_workers_poll_interval_paces_its_relay_unless_a_relay_config_is_given(clock: FakeClock) -> None:
    from engine.services.relay import RelayConfig

    eng = connect("memory://", clock=clock)
    assert eng.worker([send_email], poll_interval=4.0).relay.config.poll_interval == 4.0
    assert eng.worker([send_email]).relay.config.poll_interval == 1.0
    own = eng.worker([send_email], poll_interval=4.0, relay_config=RelayConfig(poll_interval=0.5))
    assert own.relay.config.poll_interval == 0.5
    with pytest.raises(JobsError) as e:  # refused as the worker's option it is, not as the relay's
        eng.worker([send_email], poll_interval=0)
    assert "worker option poll_interval=0" in e.value.cause
    assert eng.worker([send_email], relay=False, poll_interval=4.0).relay is None
    eng.close()
