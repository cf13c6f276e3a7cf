"""The maintenance leader's buckets of settled rows (0012_settled_buckets.sql): the open bucket
is sealed once it has been open for a quarter of the retention, and a sealed bucket is dropped
whole once every completed and cancelled row in it is past retention (its young dead letters
moved to the open bucket first). So a completed row is kept at least ``retention`` and at most
``retention`` plus a bucket's width, pruning costs a catalog operation whatever the rate, and the
open bucket's indexes hold a quarter of the retention's rows. The row pruner still deletes rows
past retention one by one from jobs.job_done itself and the open bucket (a leader that cannot
seal keeps the exact retention that way)."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from engine.drivers.base import Driver
from engine.errors import X_PERMISSION_DENIED, JobsError
from engine.runtime import logs

# A bucket's width: the share of the retention it stays open.
WIDTH = 0.25


class Buckets:
    def __init__(self, driver: Driver, *, leader: str, holder: str) -> None:
        self.driver, self.leader, self.holder = driver, leader, holder
        self.refused = False  # told once that this role may not seal or drop

    async def upkeep(self, term: int, now: datetime, *, retention: float, dead_retention: float) -> int:
        """Seal the open bucket if it is due, then drop the sealed buckets past retention, oldest
        first; the rows dropped."""
        d, fence = self.driver, {"leader": self.leader, "holder": self.holder}
        try:
            buckets = await d.settled_buckets(**fence, term=term, now=now)
            if any(b.sealed_at is None and now - b.opened_at >= timedelta(seconds=retention * WIDTH) for b in buckets):
                sealed = await d.settled_seal(**fence, term=term, now=now)
                if sealed is not None:
                    logs.emit(logs.MAINTENANCE_SEALED, logging.DEBUG, bucket=sealed)
            before = now - timedelta(seconds=retention)
            dead_before = now - timedelta(seconds=dead_retention)
            dropped = 0
            for b in buckets:
                if b.sealed_at is None or b.sealed_at >= before:
                    break  # the open bucket, or one sealed too recently to be past retention
                rows = await d.settled_drop(
                    **fence, term=term, now=now, bucket=b.n, before=before, dead_before=dead_before
                )
                if rows is None:
                    break
                logs.emit(logs.MAINTENANCE_DROPPED, bucket=b.n, count=rows)
                dropped += rows
        except JobsError as err:
            if err.code != X_PERMISSION_DENIED:
                raise
            if not self.refused:
                self.refused = True
                logs.emit(logs.MAINTENANCE_BUCKETS_REFUSED, logging.WARNING, cause=err.cause, fix=err.fix)
            return 0
        return dropped
