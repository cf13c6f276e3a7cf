"""The filter words the CLI and the console's filter bar take: since= and until= read an ISO time
with its zone or a duration back from now, and anything else is refused naming both forms."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from engine.errors import JobsError
from engine.introspect.filters import parse_filter


def test_since_and_until_take_a_duration_back_from_now_or_an_iso_time() -> None:
    before = datetime.now(UTC)
    where = parse_filter("since=1h until=30m")
    after = datetime.now(UTC)
    assert where.since is not None and where.until is not None
    assert before - timedelta(hours=1) <= where.since <= after - timedelta(hours=1)
    assert before - timedelta(minutes=30) <= where.until <= after - timedelta(minutes=30)
    assert parse_filter("since=2026-01-01T12:00:00+00:00").since == datetime(2026, 1, 1, 12, tzinfo=UTC)


@pytest.mark.parametrize("value", ["yesterday", "2026-01-01T12:00:00", "-1h"])
def test_a_since_that_is_neither_a_zoned_time_nor_a_duration_is_refused_naming_both(value: str) -> None:
    with pytest.raises(JobsError) as err:
        parse_filter(f"since={value}")
    assert err.value.code == "X_INVALID_ARGUMENT" and "nor a duration back from now" in err.value.cause
    assert err.value.fix == "jobsctl ls --filter since=1h"
