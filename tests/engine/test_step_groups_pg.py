"""The Postgres step store's group commit, end to end: concurrent step writes of many claimed jobs
share statements, each is fenced on its own claim and answered on its own, and what each wrote
reads back exactly (a JSON null result is a result; no result is none)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from engine.clock import SystemClock
from engine.drivers.postgres import PostgresDriver
from engine.ids import IdFactory
from engine.types import Claim, NewJob, StoredStep


async def test_concurrent_step_writes_share_statements_and_each_is_fenced_on_its_own_claim(pg_dsn: str) -> None:
    driver = PostgresDriver(pg_dsn)
    try:
        now = datetime.now(UTC)
        ids = IdFactory(SystemClock())
        jobs = [
            NewJob(id=ids.new(), name="steppy", queue="steps", idempotency_key=f"k{i}", input={"i": i}, max_attempts=3)
            for i in range(40)
        ]
        await driver.job_enqueue(jobs=jobs, now=now)
        claimed = (await driver.worker_claim(queues=["steps"], limit=40, worker="w1", now=now, lease_seconds=60)).jobs
        assert len(claimed) == 40
        groups: list[int] = []
        real = driver._step_save_group

        async def counted(rows: list[list[Any]]) -> set[Any]:
            groups.append(len(rows))
            return await real(rows)

        driver._step_save_group = counted  # type: ignore[method-assign]
        stale = claimed[7].claim
        claims = [c.claim for c in claimed]
        claims[7] = Claim(stale.job_id, stale.worker, stale.run + 1)  # a run that no longer holds the job

        def step(c: Claim, k: int) -> StoredStep:
            result: Any = None if k % 3 == 0 else {"n": k}
            return StoredStep(
                job_id=c.job_id,
                name="fetch",
                seq=1,
                kind="run",
                status="completed",
                attempt=1,
                run=c.run,
                started_at=now,
                finished_at=now + timedelta(milliseconds=k),
                result=result,
            )

        answers = await asyncio.gather(*(driver.step_save(claim=c, step=step(c, k)) for k, c in enumerate(claims)))
        assert answers == [k != 7 for k in range(40)]
        assert len(groups) < 40 and sum(groups) == 40  # the writes shared statements
        for k, c in enumerate(claims):
            stored = await driver.step_load(job_id=c.job_id)
            if k == 7:
                assert stored == []
            else:
                (s,) = stored
                assert (s.result, s.status, s.finished_at) == (
                    None if k % 3 == 0 else {"n": k},
                    "completed",
                    now + timedelta(milliseconds=k),
                )
        trace = await driver.step_list(job_id=claims[0].job_id)
        assert trace[0].result_size == len("null")  # a JSON null result is stored as one
    finally:
        await driver.close()
