"""Job detail numbers runs truthfully and places steps on their run's time axis: two runs after a
retry from a step are #1 and #2 (each at attempt 1 of its own count), and a step's bar starts where
in its run it started (a sleep is the gap it is), not at the left edge scaled to the longest step."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from console.demo.world import seeded_source
from console.screens.job_detail import attempts_text, runs_of, traceback_text
from console.widgets.timeline import timeline_text
from engine.projections import JobFilter
from engine.records import AttemptRecord, StepRecord
from engine.types import JobState

T0 = datetime(2026, 1, 1, 11, 0, tzinfo=UTC)


def step(name: str, kind: str, start: float, took: float, status: str = "completed") -> StepRecord:
    began = T0 + timedelta(seconds=start)
    return StepRecord("j", name, 0, kind, status, 1, began, began + timedelta(seconds=took), took, None, None)  # type: ignore[arg-type]


def run(n: int, start: float, end: float, outcome: str = "completed", traceback: str | None = None) -> AttemptRecord:
    return AttemptRecord("j", n, 1, "w1", T0 + timedelta(seconds=start), T0 + timedelta(seconds=end), outcome,
                         traceback=traceback)  # fmt: skip


def bars(text: str) -> list[str]:
    return [
        next(w for w in line.split() if set(w) <= set("█·▏"))
        for line in text.splitlines()[1:]
        if "█" in line or "▏" in line
    ]


def test_steps_sit_on_their_runs_time_axis_a_sleep_is_the_gap_it_is() -> None:
    steps = [step("charge", "run", 0, 1), step("settle", "sleep", 1, 60), step("notify", "run", 61, 1)]
    said = timeline_text(steps, T0 + timedelta(seconds=70), [(T0, T0 + timedelta(seconds=62))]).plain
    charge, settle, notify = bars(said)
    assert charge.startswith("█") and settle.startswith("█") and len(settle.strip("·")) >= 18
    assert notify.index("█") >= 19  # at the end of the run, where it ran (it used to start at the left)
    assert said.splitlines()[0].split()[:6] == ["step", "kind", "status", "run", "started", "on"]


def test_a_trace_holding_an_enqueue_step_is_no_wider_than_one_without() -> None:
    plain = [step("fan-out", "run", 0, 1), step("statements", "jobs", 1, 6.5)]
    fanned = [step("fan-out", "enqueue", 0, 1), step("statements", "jobs", 1, 6.5)]
    span = [(T0, T0 + timedelta(seconds=8))]
    before = timeline_text(plain, T0 + timedelta(seconds=9), span).plain.splitlines()
    after = timeline_text(fanned, T0 + timedelta(seconds=9), span).plain.splitlines()
    assert [len(line) for line in after] == [len(line) for line in before]
    assert after[1].split()[2] == "enqueue" and after[2].split()[2] == "jobs"  # each kind in its column
    assert after[1].index("completed") == after[2].index("completed") == after[0].index("status")


def test_two_runs_after_a_retry_from_step_are_numbered_one_and_two() -> None:
    spans = [(T0, T0 + timedelta(seconds=10)), (T0 + timedelta(seconds=100), T0 + timedelta(seconds=105))]
    steps = [step("fetch", "run", 0, 2), step("send", "run", 100, 5)]
    lines = timeline_text(steps, T0 + timedelta(seconds=200), spans).plain.splitlines()
    assert "#1" in lines[1].split() and "#2" in lines[2].split()
    assert bars("\n".join(lines))[1] == "█" * 20  # the whole of its own run


async def test_the_attempt_table_numbers_runs_in_the_order_they_ran() -> None:
    source = seeded_source()
    page = await source.jobs(JobFilter(state=JobState.COMPLETED))
    d = await source.job(page.items[0].id)
    two = replace(d, attempts=(run(3, 0, 10, "dead", "Traceback...\nValueError: x"), run(5, 100, 105)))
    lines = attempts_text(two, T0 + timedelta(seconds=200)).plain.splitlines()
    assert lines[0].split()[:3] == ["run", "attempt", "outcome"]
    assert lines[1].split()[:3] == ["#1", f"1/{d.job.max_attempts}", "dead"]
    assert lines[2].split()[:3] == ["#2", f"1/{d.job.max_attempts}", "completed"]
    tb = traceback_text(two, unfold=False)
    assert tb is not None and "run #1, attempt 1" in tb.plain
    assert runs_of(two, T0) == [
        (T0, T0 + timedelta(seconds=10)),
        (T0 + timedelta(seconds=100), T0 + timedelta(seconds=105)),
    ]


async def test_a_suspended_run_lasts_until_now_on_its_axis() -> None:
    source = seeded_source()
    page = await source.jobs(JobFilter(state=JobState.SUSPENDED, search="user:8"))
    d = await source.job(page.items[0].id)
    now = source.now()
    ((start, end),) = runs_of(d, now)
    assert (start, end) == (d.attempts[0].started_at, now)  # the wait under way is part of the run
    waiting = timeline_text(d.steps, now, runs_of(d, now)).plain.splitlines()[-1]
    assert waiting.split()[3] == "waiting" and len(bars(waiting + "\n" + waiting)[0].strip("·")) > 10


async def test_a_job_enqueued_in_a_trace_names_its_trace_id_and_one_without_says_nothing() -> None:
    from console.screens.job_detail import facts_text

    source = seeded_source()
    page = await source.jobs(JobFilter(state=JobState.COMPLETED))
    d = await source.job(page.items[0].id)
    assert "trace" not in facts_text(d, T0).plain.split()
    tid = "4bf92f3577b34da6a3ce929d0e0e4736"
    traced = replace(d, job=replace(d.job, trace={"traceparent": f"00-{tid}-00f067aa0ba902b7-01"}))
    assert f"trace  {tid}" in facts_text(traced, T0).plain


async def test_a_completed_jobs_error_is_said_to_be_an_earlier_runs_and_a_dead_ones_is_not() -> None:
    from console.screens.job_detail import facts_text

    source = seeded_source()
    (close,) = (await source.jobs(JobFilter(name="close_month", state=JobState.DEAD))).items
    d = await source.job(close.id)
    (line,) = [x for x in facts_text(d, T0).plain.splitlines() if x.split()[:1] == ["error"]]
    assert line.split() == ["error", "X_CLOSE_PARTIAL", "stop", "reason:", "terminal"]
    done = replace(d, job=replace(d.job, state=JobState.COMPLETED, stop_reason=None))  # retried, then completed
    (line,) = [x for x in facts_text(done, T0).plain.splitlines() if x.split()[:1] == ["error"]]
    assert line.endswith("X_CLOSE_PARTIAL  (an earlier run's: it completed since)")


async def test_the_parent_row_offers_o_only_when_o_opens_that_parent() -> None:
    """o opens the fan-in waiting for the job first: on a job whose fan-in is not the job whose
    fan-out enqueued it, the parent row names no key (the why line names the fan-in's)."""
    from console.screens.job_detail import facts_text

    source = seeded_source()
    kid = next(j for j in (await source.jobs(JobFilter(name="render_statement"))).items)
    d = await source.job(kid.id)
    (parent_line,) = [x for x in facts_text(d, T0).plain.splitlines() if x.split()[:1] == ["parent"]]
    assert parent_line.rstrip().endswith("o: open")  # its parent's fan-in waits for it, or none does
    causes = d.why.causes  # the same job, a fan-in other than its parent waiting for it
    awaited = [replace(c, job_id="0" * 32) for c in causes if c.kind == "awaited"]
    moved = awaited or [replace(causes[0], kind="awaited", job_id="0" * 32)]
    other = replace(d, why=replace(d.why, causes=[c for c in causes if c.kind != "awaited"] + moved))
    (parent_line,) = [x for x in facts_text(other, T0).plain.splitlines() if x.split()[:1] == ["parent"]]
    assert "o: open" not in parent_line


async def test_a_settled_job_without_steps_says_it_ran_without_any_and_a_live_one_that_none_is_reached_yet() -> None:
    """A completed cron job's detail said it "has not reached a ctx.step call", as if one were to
    come: a job that will not run again ran without any."""
    from console.app import JobsConsole
    from console.messages import Navigate
    from tests.console.conftest import SMALL, settle

    source = seeded_source()
    page = await source.jobs(JobFilter(state=JobState.COMPLETED), cursor=None)
    done = [j for j in page.items if not (await source.job(j.id)).steps][0]
    app = JobsConsole(source, refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        app.post_message(Navigate("job", {"job_id": done.id}))
        await settle(pilot)
        said = str(app.screen.query_one("#steps").render())
        assert said == "No steps: it ran without a ctx.step call.", said
    assert "has not reached a ctx.step call" in timeline_text([], T0).plain  # a live job's: none yet
