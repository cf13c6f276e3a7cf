"""A worker's first wait for work subscribes (LISTEN) and answers at once: a job enqueued (and
NOTIFYed) after the worker's first claim found nothing but before the subscription reached no one,
so the worker must look again right then, not at its next poll."""

from __future__ import annotations

from engine.drivers.postgres import PostgresDriver


async def test_a_fresh_subscription_answers_woken_at_once_and_a_standing_one_waits(pg_dsn: str) -> None:
    d = PostgresDriver(pg_dsn)
    await d.open()
    try:
        assert await d.queue_wait(queues=["q"], timeout=60) is True  # subscribed just now: look
        assert await d.queue_wait(queues=["q"], timeout=0.05) is False  # subscribed: nothing sent
        await d.queue_notify(queues=["q"])
        assert await d.queue_wait(queues=["q"], timeout=60) is True
    finally:
        await d.close()
