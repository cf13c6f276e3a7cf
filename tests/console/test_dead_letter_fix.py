"""What a dead letter's error said to do (a handler's JobsError fix) is in front of the on-call
engineer where the error is: under the selected group's last error on Dead letters, and beside
the error on the job's detail, at 80x24 as wide."""

from __future__ import annotations

from textual.widgets import Static

from console.app import JobsConsole
from console.demo.world import seeded_source
from tests.console.conftest import settle

DECLINED_FIX = "ask the customer for another card"  # console/demo/jobs.py's charge_card says so


async def test_the_selected_dead_letter_group_and_its_jobs_detail_show_the_fix_its_error_named() -> None:
    app = JobsConsole(seeded_source())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("3")
        await settle(pilot)
        detail = app.screen.query_one("#detail", Static)
        for _ in range(4):  # down to charge_card's group, wherever the demo's hour put it
            if "X_CARD_DECLINED" in str(detail.render()):
                break
            await pilot.press("down")
            await settle(pilot)
        lines = str(detail.render()).splitlines()
        assert lines[0].startswith("last error: X_CARD_DECLINED: issuer declined invoice")
        assert f"fix: {DECLINED_FIX}" in lines
        assert any(line.startswith("Enter: its jobs") for line in lines)  # the keys still in view
        await pilot.press("enter")  # the group's jobs
        await settle(pilot)
        await pilot.press("enter")  # the newest of them
        await settle(pilot)
        facts = str(app.screen.query_one("#facts", Static).render()).splitlines()
        at = next(i for i, line in enumerate(facts) if line.split()[:1] == ["error"])
        assert facts[at].split()[1] == "X_CARD_DECLINED"
        assert facts[at + 1].split(None, 1) == ["fix", DECLINED_FIX]
