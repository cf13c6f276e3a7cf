"""A bulk from the CLI stopped by a signal ends between two batches and says what landed; on a
terminal it shows its running totals as it goes."""

from __future__ import annotations

import asyncio
import os
import pty
import re
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from engine.clock import FakeClock
from engine.drivers.postgres import PostgresDriver
from engine.ids import IdFactory
from engine.introspect import Introspector, parse_filter
from engine.testing import make_job
from engine.types import JobState

ROOT = Path(__file__).resolve().parents[2]


async def _read_until(fd: int, marker: bytes) -> bytes:
    got = b""
    while marker not in got:
        chunk = await asyncio.wait_for(asyncio.to_thread(os.read, fd, 1024), 30)
        assert chunk, f"the command ended before it wrote {marker!r}: {got!r}"
        got += chunk
    return got


async def test_a_paced_bulk_retry_stopped_by_sigint_ends_between_batches_and_says_what_landed(pg_dsn: str) -> None:
    driver = PostgresDriver(pg_dsn)
    await driver.open()
    try:
        now = datetime.now(UTC)
        ids = IdFactory(FakeClock(now), seed=3)
        for _ in range(5):
            await make_job(driver, ids, now, state=JobState.DEAD, queue="signalled")
        cmd = [sys.executable, "-c", "from engine.cli import main; main()", "retry", "--all", "-f", "queue=signalled"]
        cmd += ["--rate", "0.5", "--yes", "--dsn", pg_dsn]  # a job at a time, 2 s apart
        master, slave = pty.openpty()  # stderr a terminal: the running totals are written there
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, stderr=slave, text=True
        )
        os.close(slave)
        try:
            seen = await _read_until(master, b"so far")  # the first batch landed; its pace runs
            assert b"retry: 1 changed, 0 skipped so far" in seen
            proc.send_signal(signal.SIGINT)
            out, _ = await asyncio.to_thread(proc.communicate, timeout=30)
        finally:
            os.close(master)
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 130, out
        said = re.search(r"retry: stopped by a signal: (\d+) changed, 0 skipped; the rest are as they were", out)
        assert said is not None, out
        landed = int(said.group(1))
        dead = (await Introspector(driver).jobs(parse_filter("queue=signalled state=dead"))).items
        assert 1 <= landed < 5 and len(dead) == 5 - landed  # nothing after the stop
    finally:
        await driver.close()
