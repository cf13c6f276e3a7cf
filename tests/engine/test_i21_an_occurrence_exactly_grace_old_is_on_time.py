"""I21's catch-up boundary: an occurrence at most the grace old when its tick comes is on time (a
handover takes up to a lease) and is enqueued whatever the policy; a microsecond past it, it was
missed and `skip` drops it. A tick that lands exactly on the grace must not lose the occurrence."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from engine.schedule import Step, plan_catch_up

AT = datetime(2026, 1, 1, 13, 0, tzinfo=UTC)


@pytest.mark.parametrize("policy", ["skip", "latest", "all"])
def test_i21_an_occurrence_exactly_the_grace_old_is_enqueued_under_every_policy(policy: str) -> None:
    steps = plan_catch_up([AT], now=AT + timedelta(seconds=35), policy=policy, max_catch_up=1, grace=35.0)  # type: ignore[arg-type]
    assert steps == [Step(AT, 0, True)]


def test_i21_an_occurrence_just_past_the_grace_is_missed_and_skip_drops_it() -> None:
    late = AT + timedelta(seconds=35, microseconds=1)
    assert plan_catch_up([AT], now=late, policy="skip", max_catch_up=1, grace=35.0) == [Step(AT, 1, False)]
