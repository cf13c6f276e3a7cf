"""Nothing a worker logs at info level shows the DSN's password or a job's input: a real `jobs
worker` process, pointed at a DSN with a password, runs jobs that complete, fail terminally,
fail and retry until dead, and suspend, each with a marker in its input; its whole log stream is
then searched for both."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from psycopg.conninfo import make_conninfo

from engine.api import Enqueue, connect
from tests.engine import secrets_app as app

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "pw-4c1d-never-logged"
MARKER = "card-4242-4242-never-logged"


async def test_i25_no_log_line_shows_the_dsn_password_or_a_jobs_input(pg_dsn: str) -> None:
    dsn = make_conninfo(pg_dsn, password=PASSWORD)  # trust authentication ignores it; the DSN still holds it
    eng = connect(dsn)
    handles = (app.ok, app.declined, app.flaky, app.waits)
    await eng.aenqueue_many([Enqueue(h, {"k": h.name, "card": MARKER}) for h in handles])
    cmd = [sys.executable, "-c", "from engine.cli import main; main()", "worker", "tests.engine.secrets_app"]
    env = {**os.environ, "JOBS_DSN": dsn}
    proc = subprocess.Popen(
        [*cmd, "--queues", app.QUEUE], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines: list[str] = []
    try:
        # what proves each job ran: a failure logged, a death logged, the handler's own word
        waiting = {("secret.declined", "jobs.attempt.failed"), ("secret.flaky", "dead"), ("secret.waits", "WAITING")}
        while waiting:
            try:
                line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 30)  # type: ignore[union-attr]
            except TimeoutError:
                raise AssertionError(f"still waiting for {waiting} after:\n" + "".join(lines)) from None
            assert line, "the worker exited early:\n" + "".join(lines)
            lines.append(line)
            if line.startswith("WAITING"):
                waiting.discard(("secret.waits", "WAITING"))
            try:
                event = json.loads(line)
            except ValueError:
                continue
            name = event.get("name") or event.get("job")
            waiting.discard((name, event.get("event")))
            if event.get("event") == "jobs.attempt.failed" and event.get("stop") == "attempts-exhausted":
                waiting.discard(("secret.flaky", "dead"))
        assert (await eng.aget(await _ok_id(eng))).result == {"echo": MARKER}  # the input did reach the handler
    finally:
        proc.terminate()
        rest, _ = proc.communicate(timeout=30)
        lines.append(rest)
        await eng.aclose()
    text = "".join(lines)
    assert "jobs.worker.started" in text and "jobs.worker.stopped" in text
    assert PASSWORD not in text
    assert MARKER not in text


async def _ok_id(eng) -> str:  # type: ignore[no-untyped-def]
    from engine.introspect import Introspector
    from engine.projections import JobFilter

    page = await Introspector(eng).jobs(JobFilter(name="secret.ok"))
    [only] = page.items
    return only.id
