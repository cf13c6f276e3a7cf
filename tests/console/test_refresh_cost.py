"""A refresh that brings nothing new redraws nothing: no Static is updated, no footer rebuilt,
and a hidden screen's header waits until the screen is back on top (the CPU per refresh the
bench measures; the figures live in bench/README.md, never in a test)."""

from __future__ import annotations

import pytest
from textual.widgets import Footer, Static

from console.app import JobsConsole
from console.demo.world import seeded_source
from console.screens.job_detail import JobDetailScreen
from console.widgets.header import StatusHeader
from tests.console.conftest import SIZE, settle


def _count_updates(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    update, recompose = Static.update, Footer.recompose

    def counted_update(self: Static, *args: object, **kwargs: object) -> None:
        seen.append(f"{type(self).__name__}#{self.id}")
        update(self, *args, **kwargs)  # type: ignore[arg-type]

    async def counted_recompose(self: Footer) -> None:
        seen.append("Footer.recompose")
        await recompose(self)

    monkeypatch.setattr(Static, "update", counted_update)
    monkeypatch.setattr(Footer, "recompose", counted_recompose)
    return seen


@pytest.mark.parametrize("mode", ["overview", "jobs", "dead_letters", "workers", "outbox"])
async def test_an_unchanged_refresh_updates_no_widget(monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        await app.switch_mode(mode)
        await settle(pilot)
        seen = _count_updates(monkeypatch)
        for _ in range(3):
            app.screen.reload()  # type: ignore[attr-defined]
            await settle(pilot)
        assert seen == []


async def test_job_detail_rebuilds_its_footer_only_when_the_offered_actions_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = seeded_source()
    app = JobsConsole(source, refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        job = next(iter((await source.jobs(_dead())).items))
        await app.push_screen(JobDetailScreen(job.id))
        await settle(pilot)
        seen = _count_updates(monkeypatch)
        for _ in range(3):
            app.screen.reload()  # type: ignore[attr-defined]
            await settle(pilot)
        assert seen == []
        await source.retry(job.id)  # dead -> ready: retry is no longer offered, cancel is
        app.screen.reload()  # type: ignore[attr-defined]
        await settle(pilot)
        assert "Footer.recompose" in seen
        assert app.screen.check_action("retry", ()) is False and app.screen.check_action("cancel", ()) is True


async def test_a_hidden_screens_header_catches_up_when_it_is_back_on_top() -> None:
    source = seeded_source()
    app = JobsConsole(source, refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        overview = app.screen
        before = str(overview.query_one(StatusHeader).content)
        await app.switch_mode("jobs")
        await settle(pilot)
        source.engine.clock.advance(180)  # type: ignore[attr-defined]
        app.screen.reload()  # type: ignore[attr-defined]
        await settle(pilot)
        assert str(overview.query_one(StatusHeader).content) == before  # hidden: not redrawn
        shown = str(app.screen.query_one(StatusHeader).content)
        assert shown != before
        await app.switch_mode("overview")
        await settle(pilot)
        assert str(overview.query_one(StatusHeader).content).split("every")[0] == shown.split("every")[0]


def _dead():  # type: ignore[no-untyped-def]
    from engine.projections import JobFilter
    from engine.types import JobState

    return JobFilter(state=JobState.DEAD)


async def test_screens_and_footer_rebuilds_leave_no_widget_behind() -> None:
    # Textual keeps a widget alive in the watcher list of what it watched (the app, the footer)
    # until that attribute next changes: popped screens and rebuilt footer keys must not pile up.
    from console.widgets.footer import ConsoleFooter

    source = seeded_source()
    app = JobsConsole(source, refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        job = next(iter((await source.jobs(_dead())).items))
        await settle(pilot)
        for _ in range(5):
            await app.push_screen(JobDetailScreen(job.id))
            await settle(pilot)
            app.screen.refresh_bindings()  # a footer rebuild
            await settle(pilot)
            await app.pop_screen()
            await settle(pilot)
        app_watchers = getattr(app, "__watchers", {})
        assert all(node is app or node.is_attached for entries in app_watchers.values() for node, _ in entries)
        footer = app.screen.query_one(ConsoleFooter)
        footer_watchers = getattr(footer, "__watchers", {})
        assert all(node is footer or node.is_attached for entries in footer_watchers.values() for node, _ in entries)
