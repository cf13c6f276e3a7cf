"""The app module `jobsctl scheduler` runs in the scheduler's process tests: no tests here."""

from __future__ import annotations

from engine.tasks import task


@task(name="k.every_second", cron="* * * * * *", queue="cron-kill", catch_up="all", max_catch_up=1000)
async def every_second(ctx, inp):  # type: ignore[no-untyped-def]
    return inp["scheduled_for"]
