"""bench.projections seeds the share of live rows it is told (the console during a backlog: past
2%, the rest of the live rows ready) and refuses a share outside 2..90 before a server starts."""

from __future__ import annotations

from collections.abc import Callable

import psycopg
import pytest

from bench.projections import main, seed
from engine.testing import install


def _states(dsn: str, live: int) -> dict[str, int]:
    install(dsn)
    seed(dsn, 1_000, live=live)
    with psycopg.connect(dsn) as conn:
        return dict(conn.execute("select state, count(*)::int from jobs.job group by state").fetchall())


def test_the_projections_seed_makes_the_live_share_it_is_told_a_backlog_of_ready_rows(
    empty_db: Callable[[], str],
) -> None:
    mix, backlog = _states(empty_db(), 2), _states(empty_db(), 50)
    live = ("ready", "delayed", "running", "suspended", "parked")
    assert sum(mix.values()) == sum(backlog.values()) == 1_000
    assert sum(mix.get(s, 0) for s in live) == 20 and mix["completed"] == 950 and mix["dead"] == 30
    assert sum(backlog.get(s, 0) for s in live) == 500 and backlog["ready"] == 4 + 480
    assert backlog["completed"] + backlog["dead"] == 500 and backlog["dead"] == 20  # 95:3 of the settled


def test_the_projections_bench_refuses_a_live_share_outside_its_range(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["--live-percent", "95"])
    assert exit.value.code == 2
    assert "--live-percent 95: must be within 2..90" in capsys.readouterr().err
