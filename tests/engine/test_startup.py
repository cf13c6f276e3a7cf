"""A start that waits for its database (engine/runtime/startup.py) tries a last time at its
start_timeout rather than giving up when the next backoff would overshoot it: a database that
answers before the deadline is reached. Driven on a clock whose sleeps pass at once."""

from __future__ import annotations

import pytest

from engine.clock import FakeClock
from engine.errors import X_DB_UNREACHABLE, X_SCHEMA_MISSING, JobsError
from engine.runtime.startup import when_reachable


class InstantClock(FakeClock):
    """A fake clock whose sleeps pass at once, each moving its time on by the sleep."""

    async def sleep(self, seconds: float) -> None:
        self.advance(seconds)


def _database(clock: FakeClock, answers_at: float | None, tries: list[float]):  # type: ignore[no-untyped-def]
    async def connect() -> None:
        tries.append(round(clock.monotonic(), 6))
        if answers_at is None or clock.monotonic() < answers_at:
            raise JobsError(X_DB_UNREACHABLE, cause="no answer", fix="pg_ctl start")

    return connect


async def test_a_database_answering_before_start_timeout_is_reached_by_a_last_try_at_the_deadline() -> None:
    clock, tries = InstantClock(), []
    await when_reachable(_database(clock, 1.9, tries), worker="w1", start_timeout=2, clock=clock)
    assert tries == [0.0, 0.1, 0.3, 0.7, 1.5, 2.0]  # the backoff's next wait (1.6 s) cut to the 0.5 s left


async def test_a_database_that_never_answers_is_given_up_on_after_the_try_at_the_deadline() -> None:
    clock, tries = InstantClock(), []
    with pytest.raises(JobsError) as err:
        await when_reachable(_database(clock, None, tries), worker="w1", start_timeout=2, clock=clock)
    assert tries == [0.0, 0.1, 0.3, 0.7, 1.5, 2.0]
    assert err.value.code == X_DB_UNREACHABLE
    assert "after 6 attempts in 2.0 s; start_timeout 2 s" in err.value.cause


async def test_a_start_timeout_shorter_than_the_first_backoff_still_tries_at_its_deadline() -> None:
    clock, tries = InstantClock(), []
    await when_reachable(_database(clock, 0.05, tries), worker="w1", start_timeout=0.05, clock=clock)
    assert tries == [0.0, 0.05]


async def test_a_refusal_other_than_an_unreachable_database_is_raised_at_once() -> None:
    clock, tries = InstantClock(), []

    async def no_schema() -> None:
        tries.append(clock.monotonic())
        raise JobsError(X_SCHEMA_MISSING, cause="no jobs schema", fix="jobsctl migrate")

    with pytest.raises(JobsError) as err:
        await when_reachable(no_schema, worker="w1", start_timeout=2, clock=clock)
    assert err.value.code == X_SCHEMA_MISSING and tries == [0.0]
