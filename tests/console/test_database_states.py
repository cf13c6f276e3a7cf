"""The console against a real PostgreSQL that freezes, shuts down and comes back: the banner
appears within one refresh interval of the refresh that meets the trouble, names the condition
(unreachable: no answer at all; shutting down: the server said so), never a raw driver error nor
"ran past its time budget"; and the console is back within one retry interval of the server's
return (a failed read drops the engine's connections, so the retry connects afresh)."""

from __future__ import annotations

import time
from collections.abc import Callable

from console.app import JobsConsole
from console.source import Source
from engine.api import connect
from engine.testing import EmbeddedPostgres
from tests.console.conftest import SIZE

REFRESH = 1.0
SLACK = 1.5  # seconds of scheduling noise a loaded machine may add to a measured wait


async def until(pilot, check: Callable[[], bool], limit: float) -> float:  # type: ignore[no-untyped-def]
    """Seconds until ``check`` holds (real time: the database is real), failing past ``limit``."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < limit, f"not within {limit}s"
        await pilot.pause(0.05)
    return time.monotonic() - started


def titles(app: JobsConsole) -> str:
    return "" if app.db_error is None else f"{app.db_error[0]} | {app.db_error[1]}"


async def test_a_frozen_server_raises_the_banner_within_a_refresh_and_the_console_is_back_within_a_retry(
    pg_cluster: EmbeddedPostgres, pg_dsn: str
) -> None:
    engine = connect(pg_dsn)
    app = JobsConsole(Source(engine), refresh=REFRESH)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.last_refresh is not None, 20)
        with pg_cluster.frozen(backends=True):
            # The next refresh is due within one interval; it gives up after one more.
            took = await until(pilot, lambda: app.db_error is not None, 2 * REFRESH + SLACK)
            title, detail, retry_in = app.db_error  # type: ignore[misc]
            assert title == "database unreachable", titles(app)
            assert detail == f"no answer within {REFRESH:g}s: the server is frozen, overloaded or cut off"
            assert "budget" not in titles(app) and "DISCONNECTED" in str(app.screen.query_one("#status").render())
            await pilot.pause(2 * REFRESH)  # retries meet it still frozen, and say the same
            assert app.db_error is not None and app.db_error[0] == "database unreachable"
            retry_in = app.db_error[2]
        back = await until(pilot, lambda: app.db_error is None, retry_in + SLACK)
        print(f"frozen: banner after {took:.2f}s; back {back:.2f}s after the thaw (retry every {retry_in:g}s)")
    await engine.aclose()


async def test_a_server_shutting_down_is_named_so_then_unreachable_and_the_console_recovers_on_its_return(
    pg_cluster: EmbeddedPostgres, pg_dsn: str
) -> None:
    engine = connect(pg_dsn)
    app = JobsConsole(Source(engine), refresh=REFRESH)
    seen: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.last_refresh is not None, 20)
        pg_cluster.stop()
        try:
            took = await until(pilot, lambda: app.db_error is not None, 2 * REFRESH + SLACK)
            seen.append(app.db_error[0])  # type: ignore[index]
            await until(pilot, lambda: (seen.append(app.db_error[0]) or app.db_error[0]) == "database unreachable", 10)  # type: ignore[func-returns-value, index]
            assert not any("AdminShutdown" in t or "budget" in t for t in seen) and "AdminShutdown" not in titles(app)
            assert seen[0] == "database shutting down" and set(seen) <= {
                "database shutting down",
                "database unreachable",
            }
            retry_in = app.db_error[2]  # type: ignore[index]
        finally:
            pg_cluster.start()
        back = await until(pilot, lambda: app.db_error is None, retry_in + SLACK)
        print(f"shut down: banner after {took:.2f}s; back {back:.2f}s after the start (retry every {retry_in:g}s)")
    await engine.aclose()


def test_the_banner_names_each_condition_and_never_a_raw_driver_error() -> None:
    from engine.errors import SHUTTING_DOWN, SLOW, X_DB_UNREACHABLE, X_QUERY_BUDGET, ConnectionLost, JobsError

    said = Source.describe_failure
    budget = JobsError(
        X_QUERY_BUDGET, cause="the queues query ran past its 500 ms budget", fix="x", meta={"condition": SLOW}
    )
    assert said(budget)[0] == "database slow"
    down = ConnectionLost("the connection to the database failed: terminating connection", condition=SHUTTING_DOWN)
    assert said(down) == ("database shutting down", "the connection to the database failed: terminating connection")
    refused = JobsError(X_DB_UNREACHABLE, cause="could not connect to db on h:5432: Connection refused", fix="x")
    assert said(refused)[0] == "database unreachable"

    class AdminShutdown(Exception):  # psycopg's, as a driver that did not translate it would raise it
        pass

    assert said(AdminShutdown("terminating connection due to administrator command"))[0] == "database shutting down"
