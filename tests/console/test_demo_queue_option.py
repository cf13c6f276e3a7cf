"""`jobs-console --queue NAME demo`: a name none of the demo's jobs, workers or pauses names is
answered once the demo's engine is up and before the screen is taken over, exactly as on a real
database (X_UNKNOWN_QUEUE, the names it may have meant, the console's command on the closest),
never a console whose Jobs screen is filtered to nothing."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from console.cli import EXIT_ERROR, app
from console.demo.app import Demo
from engine.errors import JobsError


@pytest.mark.parametrize("driver", [["--memory"], []], ids=["memory", "postgres"])
def test_demo_refuses_a_mistyped_queue_with_the_queue_it_may_have_meant(
    driver: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    screens: list[object] = []
    monkeypatch.setattr(Demo, "run", lambda self, make_app: screens.append(make_app(self.source)))
    r = CliRunner(env={"JOBS_DSN": None}).invoke(app, ["--queue", "billng", "demo", *driver])
    assert r.exit_code == EXIT_ERROR, r.output
    assert r.stderr.startswith(
        "error X_UNKNOWN_QUEUE: no job, worker or pause names queue 'billng'; did you mean 'billing'?"
    ), r.stderr
    assert "  fix: jobs-console --queue billing\n" in r.stderr
    assert "jobs-console demo:" not in r.stderr  # refused before the demo announced its database
    assert screens == []


@pytest.mark.parametrize("memory", [True, False], ids=["memory", "postgres"])
def test_the_demo_without_its_world_checks_the_queue_as_every_door_does(memory: bool) -> None:
    with pytest.raises(JobsError) as refused:
        Demo(force_memory=memory, traffic=False, pace=0, world=False, queue="billng").start()
    assert refused.value.code == "X_UNKNOWN_QUEUE"
    assert "did you mean 'billing'?" in refused.value.cause
    assert refused.value.fix == "jobs-console --queue billing"
    # A queue the demo's live workers serve is known before they have registered.
    with Demo(force_memory=memory, traffic=False, pace=0, world=False, queue="billing") as demo:
        assert demo.source is not None
