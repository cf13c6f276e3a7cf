"""The throughput rollup (throughput_rollup) at its edges, run against every driver: a pass writes one
row per (queue, calendar minute) with completions or dead letters (a cancellation is neither),
rolls a minute only once it ended ``settle`` seconds before now, never further back than two hours
and never twice, moves its watermark forward only, does nothing for a caller that is not the leader
at its term, and drops the rolled minutes older than two hours on every leader pass. What it wrote
is read back through queue_series, which reads rolled minutes from the rollup."""

from __future__ import annotations

from datetime import datetime, timedelta

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.series import MinuteFigures
from engine.testing import Factory, make_job
from engine.types import JobState, NewJob

NAME = "maintenance"
MINUTE = timedelta(minutes=1)


async def _lead(driver: Driver, clock: FakeClock, holder: str = "m") -> int:
    term = await driver.leader_acquire(name=NAME, holder=holder, now=clock.now(), lease_seconds=6 * 3600)
    assert term is not None
    return term


async def _roll(driver: Driver, term: int, now: datetime, settle: float, holder: str = "m") -> int:
    return await driver.throughput_rollup(leader=NAME, holder=holder, term=term, now=now, settle=settle)


async def _minute(driver: Driver, queue: str, minute: datetime, *, now: datetime) -> MinuteFigures:
    """``queue``'s figures of ``minute`` as queue_series answers them at ``now``."""
    series = await driver.queue_series(queue=queue, now=now, budget_ms=None)
    (fig,) = [m for m in series.minutes if m.minute == minute]
    return fig


async def test_a_pass_writes_a_row_per_queue_and_minute_with_completions_or_dead_letters_and_none_for_cancellations(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    t0 = clock.now()  # 12:00:00
    term = await _lead(driver, clock)
    for at, queue, state in (
        (10, "mail", JobState.COMPLETED),
        (11, "mail", JobState.COMPLETED),
        (20, "mail", JobState.DEAD),
        (30, "sms", JobState.COMPLETED),
        (70, "sms", JobState.DEAD),  # 12:01: a minute of dead letters alone
        (80, "audit", JobState.CANCELLED),  # neither: no row
    ):
        await make_job(driver, ids, t0 + timedelta(seconds=at), state=state, queue=queue)
    clock.advance(180)  # 12:03:00
    # (12:00, mail), (12:00, sms), (12:01, sms)
    assert await _roll(driver, term, clock.now(), settle=60) == 3
    assert await _roll(driver, term, clock.now(), settle=60) == 0  # never a minute twice
    mail = await _minute(driver, "mail", t0, now=clock.now())
    assert (mail.completed, mail.dead, mail.wait_p50, mail.run_p50) == (2, 1, 0.0, 0.0)
    sms = await _minute(driver, "sms", t0 + MINUTE, now=clock.now())
    assert (sms.completed, sms.dead, sms.wait_p50, sms.wait_p95, sms.run_p50) == (0, 1, None, None, None)


async def test_a_minute_is_rolled_only_once_it_ended_settle_seconds_before_now(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    t0 = clock.now()  # 12:00:00
    term = await _lead(driver, clock)
    await make_job(driver, ids, t0 + timedelta(seconds=10), state=JobState.COMPLETED, queue="mail")
    assert await _roll(driver, term, t0 + timedelta(minutes=2, seconds=59), settle=120) == 0  # 12:00 ended 119 s ago
    assert await _roll(driver, term, t0 + timedelta(minutes=3), settle=120) == 1
    assert await _roll(driver, term, t0 + timedelta(minutes=4), settle=120) == 0


async def test_the_first_pass_rolls_the_last_two_hours_at_most(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    t0 = clock.now()  # 12:00:00
    await make_job(driver, ids, t0 - timedelta(hours=2, seconds=30), state=JobState.COMPLETED, queue="old")  # 09:59:30
    await make_job(driver, ids, t0 - timedelta(hours=2) + timedelta(seconds=10), state=JobState.COMPLETED, queue="kept")
    term = await _lead(driver, clock)
    assert await _roll(driver, term, t0, settle=0) == 1  # from 10:00 on
    # Read by a clock 1 h 50 behind: the rolled minute is there, the one never rolled is in none.
    behind = t0 - timedelta(hours=1, minutes=50)
    assert (await _minute(driver, "kept", t0 - timedelta(hours=2), now=behind)).completed == 1
    assert (await _minute(driver, "old", t0 - timedelta(hours=2, minutes=1), now=behind)).completed == 0


async def test_a_pass_on_a_clock_behind_the_watermark_counts_nothing_and_leaves_the_watermark_where_it_was(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    t0 = clock.now()  # 12:00:00
    term = await _lead(driver, clock)
    assert await _roll(driver, term, t0 + timedelta(minutes=10), settle=0) == 0  # rolled up to 12:10
    late = await make_job(driver, ids, t0 + timedelta(minutes=6, seconds=30), state=JobState.COMPLETED, queue="q")
    await make_job(driver, ids, t0 + timedelta(minutes=10, seconds=30), state=JobState.COMPLETED, queue="q")
    assert late.finished_at is not None
    assert await _roll(driver, term, t0 + timedelta(minutes=5), settle=0) == 0  # a clock 5 minutes behind
    # The watermark stayed at 12:10: only (12:10, q) is counted; the late row, recorded into a minute
    # already rolled, is in none.
    assert await _roll(driver, term, t0 + timedelta(minutes=11), settle=0) == 1
    assert (await _minute(driver, "q", t0 + timedelta(minutes=6), now=t0 + timedelta(minutes=11))).completed == 0


async def test_a_caller_that_is_not_the_leader_at_its_term_rolls_nothing_and_the_leader_still_counts_those_minutes(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    t0 = clock.now()
    term = await driver.leader_acquire(name=NAME, holder="m", now=t0, lease_seconds=600)
    assert term is not None
    await make_job(driver, ids, t0 + timedelta(seconds=10), state=JobState.COMPLETED, queue="q")
    at = t0 + timedelta(minutes=2)
    assert await _roll(driver, term, at, settle=0, holder="other") == 0
    assert await _roll(driver, term + 1, at, settle=0) == 0
    assert await _roll(driver, term, t0 + timedelta(minutes=11), settle=0) == 0  # its lease lapsed
    assert await _roll(driver, term, at, settle=0) == 1  # the watermark did not move: (12:00, q) is counted


async def test_every_leader_pass_drops_rolled_minutes_older_than_two_hours_though_it_counts_nothing(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    t0 = clock.now()  # 12:00:00
    term = await _lead(driver, clock)
    await make_job(driver, ids, t0 + timedelta(seconds=10), state=JobState.COMPLETED, queue="mail")
    assert await _roll(driver, term, t0 + MINUTE, settle=0) == 1  # (12:00, mail)
    assert await _roll(driver, term, t0 + timedelta(hours=2, seconds=30), settle=30) == 0  # up to 14:00
    behind = t0 + timedelta(minutes=30)  # a reader whose clock is far behind still sees 12:00
    assert (await _minute(driver, "mail", t0, now=behind)).completed == 1
    # 14:01:10: nothing new has ended 30 s ago (the watermark is 14:00), and 12:00 is now older than
    # two hours: this pass drops it all the same.
    assert await _roll(driver, term, t0 + timedelta(hours=2, minutes=1, seconds=10), settle=30) == 0
    assert (await _minute(driver, "mail", t0, now=behind)).completed == 0


async def test_wait_and_run_percentiles_round_half_a_millisecond_away_from_zero_live_and_rolled(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    # (extract(epoch from ...) * 1000)::int in SQL: numeric to integer rounds halves away from zero.
    t0 = clock.now()
    f = Factory(driver, ids, clock)
    jid = ids.new()
    await f.insert(NewJob(jid, "send_email", "q", f"k:{jid}", {"n": 1}, 3))
    clock.advance(0.0025)  # due 2.5 ms before its claim
    (claim,) = await f.claim_due("q")
    clock.advance(0.0005)  # run 0.5 ms
    assert await f.complete(claim) == [jid]
    live = await _minute(driver, "q", t0, now=t0 + timedelta(seconds=30))
    assert (live.completed, live.wait_p50, live.wait_p95, live.run_p50) == (1, 0.003, 0.003, 0.001)
    term = await _lead(driver, clock)
    assert await _roll(driver, term, t0 + MINUTE, settle=0) == 1
    assert await _minute(driver, "q", t0, now=t0 + MINUTE) == live
