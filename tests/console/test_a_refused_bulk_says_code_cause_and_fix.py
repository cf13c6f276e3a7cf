"""An engine refusal of a bulk action says its code, its cause and its fix, on screen and in the
activity log, as a refused one-job action does."""

from __future__ import annotations

from console.app import JobsConsole
from console.demo.world import seeded_source
from console.screens.confirm import ResultScreen
from engine.errors import JobsError
from tests.console.conftest import SIZE, drive


async def test_a_refused_bulk_retry_says_its_code_cause_and_fix_and_the_activity_log_keeps_the_fix() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SIZE) as pilot:

        async def refused(*a: object, **kw: object) -> object:
            raise JobsError("X_KEY_HELD", cause="a live job holds the key", fix="jobsctl show ID")

        app.source.bulk = refused  # type: ignore[method-assign, assignment]
        await drive("3", "X", "y")(pilot)
        assert isinstance(app.screen, ResultScreen)
        said = str(app.screen.query_one("#result-text").render())
        assert said == "X_KEY_HELD: a live job holds the key\nfix: jobsctl show ID", said
        assert "refused" in str(app.screen.query_one("#result-title").render())
        last = app.activity[-1]
        assert (last.ok, last.summary, last.fix) == (False, "X_KEY_HELD: a live job holds the key", "jobsctl show ID")
