"""Declaration and call options that would do nothing, or do the wrong thing, are refused where
they are written, with the engine's error naming the option, the bad value and a fix."""

from __future__ import annotations

import types
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from engine import RetryPolicy, connect, job, retry_schedule, task
from engine.api import Engine
from engine.backfills import Backfills, keyset
from engine.clock import FakeClock
from engine.drivers.memory import MemoryDriver
from engine.errors import X_INVALID_ARGUMENT, X_INVALID_DEFINITION, JobsError


def _refused(code: str, fn: Callable[[], Any], *named: str) -> JobsError:
    with pytest.raises(JobsError) as info:
        fn()
    err = info.value
    assert err.code == code and err.fix
    for text in named:
        assert text in err.cause, err.cause
    return err


def _src(conn: Any, after: Any, size: int) -> tuple[list[Any], Any]:
    return [], after


def _count(conn: Any) -> int:
    return 0


def _handler(ctx: Any, inp: Any) -> None:
    return None


# --- backfills -------------------------------------------------------------------------------


@pytest.mark.parametrize("env", [" production", "production ", "staging\n"])
def test_a_backfill_environment_with_space_around_it_is_refused_as_it_would_match_no_environment(env: str) -> None:
    err = _refused(
        X_INVALID_DEFINITION,
        lambda: Backfills().backfill("sweep", source=_src, count=_count, environments=["staging", env]),
        repr(env),
    )
    assert "environments=[" in err.fix


def test_backfill_environments_that_are_not_a_list_of_names_are_refused_with_the_engines_error() -> None:
    _refused(
        X_INVALID_DEFINITION,
        lambda: Backfills().backfill("sweep", source=_src, count=_count, environments=5),  # type: ignore[arg-type]
        "environments=5",
    )


class _ReadWithoutSize:
    def read(self, conn: Any, *, after: Any) -> tuple[list[Any], Any]:
        return [], after


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"source": lambda conn, after: ([], after)}, "source="),
        ({"source": _ReadWithoutSize()}, "read(conn, *, after, size)"),
        ({"count": lambda: 0}, "count="),
    ],
)
def test_a_backfill_source_or_count_that_cannot_take_what_a_pass_hands_it_is_refused_at_declaration(
    options: dict[str, Any], named: str
) -> None:
    given: dict[str, Any] = {"source": _src, "count": _count, **options}
    _refused(X_INVALID_DEFINITION, lambda: Backfills().backfill("sweep", **given), named)


def test_a_backfill_handle_that_cannot_take_its_batch_is_refused_at_declaration() -> None:
    declare = Backfills().backfill("sweep", source=_src, count=_count)
    _refused(X_INVALID_DEFINITION, lambda: declare(lambda: None), "cannot take one argument")  # type: ignore[arg-type, misc]


def test_backfills_connect_and_migrations_of_the_wrong_shape_are_refused_at_declaration() -> None:
    _refused(X_INVALID_DEFINITION, lambda: Backfills(connect=lambda dsn: None), "connect=")  # type: ignore[arg-type, misc]
    _refused(X_INVALID_DEFINITION, lambda: Backfills(migrations=lambda: set()), "migrations=")  # type: ignore[arg-type, misc]


def test_keyset_columns_given_as_one_string_is_refused_not_read_letter_by_letter() -> None:
    _refused(X_INVALID_DEFINITION, lambda: keyset("accounts", "id", columns="email"), "columns='email'")


@pytest.mark.parametrize("params", [{1: "x"}, [("plan", "pro")]])
def test_keyset_params_that_are_not_a_mapping_of_names_are_refused_with_the_engines_error(params: Any) -> None:
    _refused(X_INVALID_DEFINITION, lambda: keyset("accounts", "id", where="plan = %(plan)s", params=params), "params=")


def test_keyset_params_with_no_where_to_read_them_are_refused() -> None:
    _refused(X_INVALID_DEFINITION, lambda: keyset("accounts", "id", params={"plan": "pro"}), "no where=")


def test_keyset_where_that_is_not_sql_is_refused_at_declaration() -> None:
    _refused(X_INVALID_DEFINITION, lambda: keyset("accounts", "id", where=5), "where=5")  # type: ignore[arg-type]


# --- retry policy ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"delay": 5}, "delay=5"),
        ({"backoff": "fixed"}, "backoff='fixed'"),
        ({"max_delay": 60.0}, "max_delay=60.0"),
        ({"jitter": 0.2}, "jitter=0.2"),
    ],
)
def test_a_retry_policy_of_one_attempt_refuses_backoff_options_that_would_do_nothing(
    options: dict[str, Any], named: str
) -> None:
    err = _refused(X_INVALID_DEFINITION, lambda: RetryPolicy(attempts=1, **options), "attempts=1 never retries", named)
    assert err.fix.startswith("RetryPolicy(attempts=3, ")
    assert RetryPolicy(attempts=1).attempts == 1  # one attempt and no backoff: taken


# --- names -----------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["send\nemail", "send\temail", "send\x1b[31memail", "send\u202eemail"])
def test_a_job_queue_or_task_name_with_a_control_character_is_refused_at_declaration(bad: str) -> None:
    _refused(X_INVALID_DEFINITION, lambda: job(name=bad, idempotency_key=lambda inp: "k")(_handler), "position 4")
    _refused(X_INVALID_DEFINITION, lambda: job(name="ok", queue=bad, idempotency_key=lambda inp: "k")(_handler))
    _refused(X_INVALID_DEFINITION, lambda: task(name=bad, cron="0 * * * *")(_handler))
    assert job(name="send email é", idempotency_key=lambda inp: "k")(_handler).name == "send email é"


# --- the engine and its worker ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"environment": ""}, "environment=''"),
        ({"environment": 5}, "environment=5"),
        ({"clock": 1}, "clock=1"),
        ({"clock": FakeClock}, "a class, not a clock"),
        ({"ids": "seed"}, "ids='seed'"),
    ],
)
def test_connect_refuses_a_bad_environment_clock_or_ids_when_the_engine_is_built(
    options: dict[str, Any], named: str
) -> None:
    _refused(X_INVALID_ARGUMENT, lambda: connect("memory://", **options), named)
    _refused(X_INVALID_ARGUMENT, lambda: Engine(MemoryDriver(), **options), named)


@pytest.mark.parametrize("switch", ["maintenance", "relay", "scheduler"])
def test_the_workers_on_off_options_take_only_true_or_false(switch: str) -> None:
    eng = Engine(MemoryDriver(), clock=FakeClock(datetime(2026, 1, 1, tzinfo=UTC)))
    handle = job(name="opts.switch", idempotency_key=lambda inp: "k")(_handler)
    _refused(X_INVALID_ARGUMENT, lambda: eng.worker([handle], **{switch: "no"}), f"{switch}='no'")


def test_connect_refuses_a_clock_whose_now_has_no_time_zone() -> None:
    naive = types.SimpleNamespace(now=lambda: datetime(2026, 1, 1))  # a clock of the app's own
    _refused(X_INVALID_ARGUMENT, lambda: connect("memory://", clock=naive), "not a datetime with a time zone")


def test_retry_schedule_of_something_not_a_policy_is_the_engines_error() -> None:
    _refused(X_INVALID_ARGUMENT, lambda: retry_schedule(3), "not 3")  # type: ignore[arg-type]


def _yields(ctx: Any, inp: Any) -> Any:
    yield inp


async def _yields_async(ctx: Any, inp: Any) -> Any:
    yield inp


@pytest.mark.parametrize("handler", [_yields, _yields_async])
def test_a_generator_handler_is_refused_at_declaration_as_its_body_would_never_run(handler: Any) -> None:
    _refused(X_INVALID_DEFINITION, lambda: job(name="gen", idempotency_key=lambda inp: "k")(handler), "generator")


@pytest.mark.parametrize("priority", [1.5, True, "1"])
def test_a_declared_priority_that_is_not_a_whole_number_says_so(priority: Any) -> None:
    err = _refused(
        X_INVALID_DEFINITION, lambda: job(name="p", idempotency_key=lambda inp: "k", priority=priority)(_handler)
    )
    assert f"priority={priority!r}: it must be a whole number" in err.cause and "priority=0" in err.fix


@pytest.mark.parametrize(
    ("cron", "fixed"),
    [("0 0 31 4 MON", "0 0 * 4 MON"), ("0 0 30 2 1-5", "0 0 * 2 1-5"), ("0 9 0 31 4 1", "0 9 0 * 4 1")],
)
def test_a_cron_day_of_month_no_named_month_has_is_refused_even_beside_a_weekday(cron: str, fixed: str) -> None:
    err = _refused(X_INVALID_DEFINITION, lambda: task(name="opts.never_day", cron=cron)(_handler), "only its weekday")
    assert err.fix == f"@task(name='opts.never_day', cron={fixed!r})"
    assert task(name="opts.some_day", cron="0 0 31 3,4 MON")(_handler).cron.expr == "0 0 31 3,4 MON"
    assert task(name="opts.last_day", cron="0 0 31,L 4 MON")(_handler).cron.expr == "0 0 31,L 4 MON"


@pytest.mark.parametrize(
    ("option", "named"), [("pool_sise", "did you mean 'pool_size'"), ("enviroment", "'environment'")]
)
def test_connect_refuses_an_unknown_postgres_option_naming_the_nearest(option: str, named: str) -> None:
    err = _refused(X_INVALID_ARGUMENT, lambda: connect("postgresql://app@localhost:1/app", **{option: 3}), named)
    assert err.fix.startswith("connect(dsn, ")


def test_a_task_without_its_parentheses_or_its_cron_is_the_engines_error_naming_the_fix() -> None:
    err = _refused(X_INVALID_DEFINITION, lambda: task(_handler), "without (...)")  # type: ignore[arg-type]
    assert err.fix == "@task(name='_handler', cron='0 2 * * *')"
    _refused(X_INVALID_DEFINITION, lambda: task(name="opts.no_cron")(_handler), "cron=None")


def test_a_backfill_rate_of_less_than_a_batch_a_year_is_refused() -> None:
    _refused(
        X_INVALID_DEFINITION,
        lambda: Backfills().backfill("slow", source=_src, count=_count, rate=1e-300),
        "past a year",
    )
    assert Backfills().backfill("slowest", source=_src, count=_count, rate=1 / 86400)(lambda batch: None).rate


@pytest.mark.parametrize(
    ("hook", "named"), [("on_execution", "on_execution=1 is not callable"), ("metrics", "metrics=1")]
)
def test_the_workers_hooks_of_the_wrong_kind_are_refused_when_it_is_built(hook: str, named: str) -> None:
    eng = Engine(MemoryDriver(), clock=FakeClock(datetime(2026, 1, 1, tzinfo=UTC)))
    handle = job(name="opts.hooks", idempotency_key=lambda inp: "k")(_handler)
    _refused(X_INVALID_ARGUMENT, lambda: eng.worker([handle], **{hook: 1}), named)
