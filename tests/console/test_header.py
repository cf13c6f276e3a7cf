"""The header names the database (user@host:port/db) and the context at 80 columns, never a
password."""

from __future__ import annotations

from console.app import JobsConsole
from console.demo.world import seeded_engine
from console.format import database_label
from console.source import Source
from tests.console.conftest import SMALL, settle


def test_database_label_names_host_port_and_database_never_the_password() -> None:
    assert database_label("postgresql://app:s3cret@db.internal:6432/billing") == "app@db.internal:6432/billing"
    assert database_label("host=db1 port=5433 dbname=jobs user=ops password=s3cret") == "ops@db1:5433/jobs"
    assert "s3cret" not in database_label("postgresql://app:s3cret@db.internal/billing")


async def test_the_header_at_80_columns_shows_the_context_name_and_the_database() -> None:
    label = database_label("postgresql://app:s3cret@db.internal:6432/billing")
    source = Source(seeded_engine(), database=label, driver="postgres")
    app = JobsConsole(source, refresh=60, title="prod-eu")
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        shown = str(app.screen.query_one("#status").render())
        head = shown[:80]  # what an 80-column terminal shows of it
        assert "prod-eu" in head and "app@db.internal:6432/billing" in head and "s3cret" not in shown


async def test_the_header_at_80_columns_keeps_read_only_and_disconnected_whole() -> None:
    """A long database name is cut short, never the words that say whether the console may write
    and whether the data is live."""
    from textual.widgets import Static

    source = Source(
        seeded_engine(),
        read_only=True,
        database="host=/dev/shm/jobs-pg-k2x9 port=5432 user=postgres",
        driver="postgres",
    )
    app = JobsConsole(source, refresh=60, title="demo (throwaway)")
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        header = app.screen.query_one("#status", Static)
        shown = str(header.render())
        assert len(shown) <= 80 and "READ-ONLY" in shown and "demo (throwaway)" in shown, shown
        assert "host=/dev/shm/" in shown  # the database's name, cut short to what is left
        app.db_error = ("database unreachable", "connection refused", 1.0)
        await settle(pilot)
        shown = str(header.render())
        assert len(shown) <= 80 and "READ-ONLY" in shown and "DISCONNECTED" in shown, shown
