"""Dead letters at 80 columns: name, code, stop reason, count and tenants fit on the screen
without scrolling sideways, with the demo's longest job names and error codes; the selected
group's lines say when it was first and last seen, its last error and attempt."""

from __future__ import annotations

from datetime import timedelta

from console.app import JobsConsole
from console.demo.world import seeded_source
from console.messages import DeadLettersLoaded
from console.widgets.keyed_table import KeyedTable
from engine.projections import Count, DeadGroup, DeadLetters
from tests.console.conftest import SIZE, SMALL, settle

# The demo's longest: its job names (console/demo/jobs.py) and the codes its handlers raise.
LONGEST = (
    ("provision_workspace", "X_INVALID_ARGUMENT", "attempts-exhausted"),
    ("sync_crm_contact", "X_CRM_UNAVAILABLE", "attempts-exhausted"),
    ("render_statement", "X_GATEWAY_TIMEOUT", "terminal"),
)


def _longest_groups(now) -> DeadLetters:  # type: ignore[no-untyped-def]
    groups = tuple(
        DeadGroup(
            name=name,
            error_code=code,
            stop_reason=stop,  # type: ignore[arg-type]
            count=12_345,
            first_seen=now - timedelta(hours=3),
            last_seen=now - timedelta(minutes=2),
            last_error=f"{code}: the demo's error [stop: {stop} at attempt 5 of 5]",  # as the engine stores it
            last_job_id="0190f0c0-0000-7000-8000-000000000001",
            attempt=5,
            max_attempts=5,
            tenants=128,
        )
        for name, code, stop in LONGEST
    )
    return DeadLetters(at=now, groups=groups, total=Count(3 * 12_345))


async def test_dead_letters_at_80_columns_show_tenants_whole_and_every_column_when_widened() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("3")
        await settle(pilot)
        screen = app.screen
        screen.post_message(DeadLettersLoaded(_longest_groups(app.source.now())))
        await settle(pilot)
        table = screen.query_one("#groups", KeyedTable)
        keys = table.column_keys
        assert keys == ["name", "code", "stop", "count", "tenants"]
        assert str(list(table.columns.values())[-1].label) == "tenants"
        assert table.virtual_size.width <= table.scrollable_content_region.width  # no scrolling sideways
        detail = str(screen.query_one("#detail").render())
        assert detail.startswith("last error: X_INVALID_ARGUMENT: "), detail
        assert "attempt 5 of 5]\nfirst seen 3h00m ago · last seen 2m00s ago\nEnter: its jobs" in detail, detail
        for row in range(len(LONGEST)):
            name, code, _ = LONGEST[row]
            cells = [str(c) for c in table.get_row_at(row)]
            assert cells[0] == name and cells[1] == code  # whole, not cut with "…"
            assert cells[keys.index("tenants")] == "128"

        selected = table.selected_key
        await pilot.resize_terminal(*SIZE)  # wide again: every column, the cursor on its row
        await settle(pilot)
        assert "attempt" in table.column_keys and "first" in table.column_keys
        assert table.row_count == len(LONGEST)
        assert table.selected_key == selected
