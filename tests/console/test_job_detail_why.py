"""Job detail's sentence for a job waiting for an event names when its worker next checks for the
event (the job's run_at, set by its event poll) and when it times out, not the one for the other;
its list of a fan-out's jobs says whether the job waits for them, waited for them, or only
enqueued them."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from console.demo.world import seeded_source
from console.screens.job_detail import awaited_text, event_sentence
from engine.projections import JobFilter
from engine.types import JobState


async def _waiting_detail():  # type: ignore[no-untyped-def]
    source = seeded_source()
    page = await source.jobs(JobFilter(state=JobState.SUSPENDED))
    for j in page.items:
        d = await source.job(j.id)
        if (d.job.wait or {}).get("kind") == "event":
            return source, d
    raise AssertionError("the seed holds a job waiting for an event")


async def test_event_wait_names_the_next_check_and_the_timeout() -> None:
    source, d = await _waiting_detail()
    now = source.now()
    said = event_sentence(d, now)
    assert said is not None
    assert "Sending it wakes the job at once" in said
    assert f"the next check for it is at {d.job.run_at:%H:%M:%S} (in 20s)" in said
    assert "it times out at 2026-01-02 11:59 (in 23h59m)" in said


async def test_event_wait_whose_next_check_is_its_timeout_says_only_the_timeout() -> None:
    source, d = await _waiting_detail()
    timeout = d.job.run_at  # a wait whose timeout comes before the next poll
    wait = {**(d.job.wait or {}), "timeout_at": timeout.isoformat()}
    said = event_sentence(replace(d, job=replace(d.job, wait=wait)), source.now())
    assert said is not None and "next check" not in said and "times out at" in said
    never = {k: v for k, v in wait.items() if k != "timeout_at"}
    late = replace(d.job, wait=never, run_at=source.now() - timedelta(seconds=5))
    assert event_sentence(replace(d, job=late), source.now()).endswith(
        "the next check for it is due now, and it never times out."
    )  # type: ignore[union-attr]


async def test_a_fan_outs_detail_says_which_jobs_it_waits_for_waited_for_or_only_enqueued() -> None:
    source = seeded_source()
    (close,) = (await source.jobs(JobFilter(name="close_month", state=JobState.SUSPENDED))).items
    d = await source.job(close.id)
    now = source.now()
    assert awaited_text(d, now).plain.startswith("Waits for 2 completed")  # type: ignore[union-attr]
    went_on = replace(d, job=replace(d.job, state=JobState.COMPLETED, wait=None))
    assert awaited_text(went_on, now).plain.startswith("Waited for ")  # type: ignore[union-attr]
    fanned = replace(went_on, steps=tuple(s for s in d.steps if s.kind == "enqueue"))
    said = awaited_text(fanned, now).plain  # type: ignore[union-attr]
    assert said.startswith("Enqueued 2 completed") and "w: open the first still live" in said
