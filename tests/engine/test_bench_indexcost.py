"""bench.indexcost measures what it says: every variant runs on the schema it names, and each one
that changes an index set changes what some phase writes (a change made to a table the hot path no
longer writes would read exactly like the schema it was compared with)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bench.indexcost import PHASES, VARIANTS, Sizes, measure
from engine.schema import migrate

TINY = Sizes(big=40, small=8, claim=20, cycles=6, warm=2)
BASE = "0012: settled buckets"


@pytest.mark.timeout(120)
def test_every_indexcost_variant_runs_and_each_index_change_changes_the_wal_a_phase_writes(
    empty_db: Callable[[], str],
) -> None:
    got = {}
    for name, (target, setup, ack) in VARIANTS.items():
        dsn = empty_db()
        migrate(dsn, target=target)
        got[name] = measure(dsn, setup, ack, TINY)
        assert all(got[name][p][1] > 0 for p in PHASES), (name, got[name])  # each phase wrote its rows
    wal = {name: tuple(round(got[name][p][1]) for p in PHASES) for name in got}
    # An index change on top of this tree's schema (an older schema's setup only adds a column)
    unchanged = [
        name for name, (target, setup, _) in VARIANTS.items() if target is None and setup and wal[name] == wal[BASE]
    ]
    assert not unchanged, f"these variants write what {BASE!r} writes: {unchanged}"
    # The schemas before it: each step of the migrations wrote less a job than the one before.
    assert sum(wal["0009: one table, ack in place"]) > sum(wal["0010: live table + job_done"]) > sum(wal[BASE])


def test_indexcost_refuses_a_server_before_18_with_the_fix() -> None:
    from types import SimpleNamespace

    from bench.indexcost import Meter

    info = SimpleNamespace(server_version=150018, backend_pid=1, parameter_status=lambda name: "15.18")
    with pytest.raises(RuntimeError, match=r"PostgreSQL 18 added; this server is 15\.18\. Fix: run it on"):
        Meter(SimpleNamespace(info=info))  # type: ignore[arg-type]
