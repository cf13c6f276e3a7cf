"""The `jobs` read and action commands against the real Postgres: tables, --json, exit codes,
errors as code/cause/fix (JSON on stderr with --json), dry runs before bulk actions."""

from __future__ import annotations

import asyncio
import json
import shlex
import textwrap
from pathlib import Path

import psycopg
import pytest
from typer.testing import CliRunner

from engine.cli import app
from engine.clock import SystemClock
from engine.drivers.postgres import PostgresDriver
from engine.drivers.postgres.dsn import shown_dsn
from engine.ids import IdFactory
from engine.testing import make_job
from engine.types import JobRow, JobState, WorkerRegistration

runner = CliRunner()

APP = textwrap.dedent("""
    from engine import job

    @job(name="zeta_report", idempotency_key=lambda inp: f"r:{inp['day']}")
    async def zeta(ctx, inp):
        return None

    @job(name="Alpha_mail", queue="emails", idempotency_key=lambda inp: f"u:{inp['user']}")
    async def alpha(ctx, inp):
        return None
""")


def seed(dsn: str, *states: JobState, **kw) -> list[JobRow]:  # type: ignore[no-untyped-def]
    async def go() -> list[JobRow]:
        d = PostgresDriver(dsn)
        clock = SystemClock()
        try:
            return [await make_job(d, IdFactory(clock), clock.now(), state=s, **kw) for s in states]
        finally:
            await d.close()

    return asyncio.run(go())


def cli(*args: str, input: str | None = None):  # type: ignore[no-untyped-def]
    return runner.invoke(app, list(args), input=input)


@pytest.fixture
def app_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "cli_demo_app.py").write_text(APP)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return "cli_demo_app"


def test_queues_ls_show_dead_read_with_json(pg_dsn: str) -> None:
    dead, ready = seed(pg_dsn, JobState.DEAD, JobState.READY, tenant="acme")
    r = cli("queues", "--dsn", pg_dsn, "--json")
    assert r.exit_code == 0, r.output
    (q,) = json.loads(r.stdout)["queues"]
    assert q["name"] == "default" and q["ready"] == {"value": 1, "kind": "exact"} and len(q["throughput"]) == 60
    r = cli("ls", "--dsn", pg_dsn, "--json", "--filter", "state=dead")
    assert r.exit_code == 0 and [j["id"] for j in json.loads(r.stdout)["items"]] == [dead.id]
    r = cli("show", dead.id, "--dsn", pg_dsn, "--json")
    d = json.loads(r.stdout)
    assert (
        d["job"]["state"] == "dead"
        and d["attempts"][0]["outcome"] == "dead"
        and d["why"]["causes"][0]["kind"] == "dead"
    )
    r = cli("dead", "--dsn", pg_dsn, "--json")
    assert json.loads(r.stdout)["groups"][0]["count"] == 1
    r = cli("queues", "--dsn", pg_dsn)
    assert r.exit_code == 0 and "default" in r.stdout
    r = cli("show", ready.id, "--dsn", pg_dsn)
    assert r.exit_code == 0 and ready.id in r.stdout and "why:" in r.stdout
    assert "trace:" not in r.stdout  # enqueued without tracing


def test_queues_says_the_oldest_waiting_age_as_the_console_does(pg_dsn: str) -> None:
    (ready,) = seed(pg_dsn, JobState.READY, queue="slow")
    with psycopg.connect(pg_dsn, autocommit=True) as conn:  # ready for 3 days and 4 hours
        conn.execute("update jobs.job set run_at = now() - interval '76 hours' where id = %s", (ready.id,))
    r = runner.invoke(app, ["queues", "--dsn", pg_dsn], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "3d04h" in r.stdout, r.stdout  # not "273600s"
    assert "oldest waiting" in r.stdout  # ready or parked: a parked job waits too (I8)


def test_workers_say_a_heartbeats_age_as_every_other_age_is_said(pg_dsn: str) -> None:
    async def register() -> None:
        from datetime import UTC, datetime, timedelta

        d = PostgresDriver(pg_dsn)
        try:
            then = datetime.now(UTC) - timedelta(minutes=3, seconds=5)
            await d.worker_register(
                worker=WorkerRegistration(id="w-old", host="h", pid=1, queues=("default",), concurrency=4), now=then
            )
        finally:
            await d.close()

    asyncio.run(register())
    r = runner.invoke(app, ["workers", "--dsn", pg_dsn], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "3m0" in r.stdout and " ago" in r.stdout, r.stdout  # not "185s ago"
    assert "185s" not in r.stdout


def test_show_names_the_trace_a_job_was_enqueued_in(pg_dsn: str) -> None:
    from opentelemetry.sdk.trace import TracerProvider

    from engine.api import connect
    from engine.jobs import job
    from engine.tracing import Tracing

    traced = job(name="traced_show", idempotency_key=lambda inp: inp["k"])(lambda ctx, inp: None)
    provider = TracerProvider()
    with connect(pg_dsn, tracing=Tracing(tracer_provider=provider)) as eng:
        with provider.get_tracer("app").start_as_current_span("request") as span:
            r = eng.enqueue(traced, {"k": "1"})
    want = format(span.get_span_context().trace_id, "032x")
    out = cli("show", r.id, "--dsn", pg_dsn)
    assert out.exit_code == 0 and f"trace: {want}" in out.stdout
    d = json.loads(cli("show", r.id, "--dsn", pg_dsn, "--json").stdout)
    assert d["job"]["trace"]["traceparent"].split("-")[1] == want


def test_bad_input_is_code_cause_fix_and_json_on_stderr(pg_dsn: str) -> None:
    r = cli("ls", "--dsn", pg_dsn, "--filter", "state=stuck")
    assert r.exit_code == 1 and "X_UNKNOWN_STATE" in r.stderr and "fix:" in r.stderr
    r = cli("ls", "--dsn", pg_dsn, "--filter", "state=stuck", "--json")
    assert r.exit_code == 1 and json.loads(r.stderr)["error"]["code"] == "X_UNKNOWN_STATE" and r.stdout == ""
    r = cli("show", "not-an-id", "--dsn", pg_dsn)
    assert r.exit_code == 1 and "X_MALFORMED_ID" in r.stderr
    r = cli("show", "019b796d-d600-7027-a9b3-b30678e51061", "--dsn", pg_dsn, "--json")
    assert r.exit_code == 3 and json.loads(r.stderr)["error"]["code"] == "X_NOT_FOUND"


def test_retry_cancel_and_their_no_ops(pg_dsn: str) -> None:
    dead, done, ready = seed(pg_dsn, JobState.DEAD, JobState.COMPLETED, JobState.READY)
    r = cli("retry", ready.id, "--dsn", pg_dsn)
    assert r.exit_code == 1 and "X_INVALID_STATE" in r.stderr
    r = cli("retry", dead.id, "--dsn", pg_dsn, "--actor", "alice", "--note", "INC-1", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["state"] == "ready"
    hist = json.loads(cli("show", dead.id, "--dsn", pg_dsn, "--json").stdout)["history"]
    assert [(h["kind"], h["actor"], h["note"]) for h in hist] == [("retried", "alice", "INC-1")]
    r = cli("cancel", done.id, "--dsn", pg_dsn)
    assert r.exit_code == 5 and "nothing changed" in r.stdout  # a clear no-op
    r = cli("cancel", ready.id, "--dsn", pg_dsn)
    assert r.exit_code == 0 and "cancelled" in r.stdout


def test_bulk_retry_prints_the_dry_run_and_asks(pg_dsn: str) -> None:
    seed(pg_dsn, JobState.DEAD, JobState.DEAD, JobState.DEAD, tenant="acme")
    r = cli("retry", "--all", "--filter", "tenant=acme", "--dsn", pg_dsn, input="n\n")
    assert r.exit_code == 5 and "dry run: retry 3 jobs" in r.stdout and "tenant=acme" in r.stdout
    assert json.loads(cli("queues", "--dsn", pg_dsn, "--json").stdout)["queues"][0]["dead"]["value"] == 3
    r = cli("retry", "--all", "--filter", "tenant=acme", "--dsn", pg_dsn, "--json")
    assert r.exit_code == 5 and "--yes" in r.stderr  # a script must say --yes
    r = cli("retry", "--all", "--filter", "tenant=acme", "--dsn", pg_dsn, input="y\n")
    assert r.exit_code == 0 and "3 changed" in r.stdout
    r = cli("cancel", "--all", "--filter", "tenant=acme", "--yes", "--rate", "100", "--dsn", pg_dsn, "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["result"]["changed"] == 3


def test_a_bulk_action_with_no_answer_changes_nothing_and_says_the_command_with_yes(pg_dsn: str) -> None:
    """Nothing on stdin (a script without --yes, a closed terminal): the no-op's exit and fix,
    not click's bare "Aborted!" and exit 1."""
    seed(pg_dsn, JobState.DEAD, JobState.DEAD, tenant="acme")
    for verb in ("retry", "discard"):
        r = cli(verb, "--all", "--filter", "tenant=acme", "--dsn", pg_dsn, input="")
        assert r.exit_code == 5, r.output
        assert "not confirmed; nothing changed" in r.stderr
        assert f"fix: jobsctl {verb} --all -f tenant=acme --dsn {shlex.quote(shown_dsn(pg_dsn))} --yes" in r.stderr
    assert json.loads(cli("queues", "--dsn", pg_dsn, "--json").stdout)["queues"][0]["dead"]["value"] == 2


def test_pause_resume_and_event(pg_dsn: str) -> None:
    # Nothing names "emails" yet: a typo would leave a phantom paused queue, so it takes --create.
    r = cli("pause", "emails", "--dsn", pg_dsn)
    assert r.exit_code == 1 and "X_UNKNOWN_QUEUE" in r.stderr and "jobsctl pause emails --create" in r.stderr
    r = cli("pause", "emails", "--create", "--note", "smtp down", "--actor", "bob", "--dsn", pg_dsn, "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["by"] == "bob"
    assert cli("pause", "emails", "--dsn", pg_dsn).exit_code == 5
    q = json.loads(cli("queues", "--dsn", pg_dsn, "--json").stdout)["queues"]
    assert [(x["name"], x["paused"], x["paused_by"]) for x in q] == [("emails", True, "bob")]
    assert cli("resume", "emails", "--dsn", pg_dsn).exit_code == 0
    assert json.loads(cli("queues", "--dsn", pg_dsn, "--json").stdout)["queues"] == []  # no phantom left
    r = cli("event", "invoice.paid", "--payload", '{"invoice": 42}', "--dsn", pg_dsn, "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["woken"] == 0
    r = cli("event", "invoice.paid", "--payload", "{nope", "--dsn", pg_dsn)
    assert r.exit_code == 1 and "X_INVALID_ARGUMENT" in r.stderr


def test_i23_describe_sorts_by_code_points_and_check_fails_on_drift(app_module: str, tmp_path: Path) -> None:
    r = cli("describe", "--app", app_module)
    assert r.exit_code == 0
    manifest = json.loads(r.stdout)
    # Code points: upper case sorts before lower case (a locale would put alpha first either way).
    assert [m["name"] for m in manifest] == ["Alpha_mail", "zeta_report"]
    assert all(m["idempotent"] is True and "idempotency_key" not in m for m in manifest)
    committed = tmp_path / "jobs.manifest.json"
    committed.write_text(r.stdout)
    assert cli("describe", "--app", app_module, "--check", str(committed)).exit_code == 0
    committed.write_text(r.stdout.replace("emails", "mail"))
    r = cli("describe", "--app", app_module, "--check", str(committed))
    assert r.exit_code == 4 and '-    "queue": "mail"' in r.stdout and "drifted" in r.stderr


def test_enqueue_answers_id_and_deduped(app_module: str, pg_dsn: str) -> None:
    args = (
        "enqueue",
        "Alpha_mail",
        "--app",
        app_module,
        "--input",
        '{"user": 7}',
        "--tenant",
        "acme",
        "--dsn",
        pg_dsn,
        "--json",
    )
    first = json.loads(cli(*args).stdout)
    again = json.loads(cli(*args).stdout)
    assert not first["deduped"] and again["deduped"] and again["id"] == first["id"]
    r = cli(
        "enqueue",
        "zeta_report",
        "--app",
        app_module,
        "--input",
        '{"day": 1}',
        "--delay",
        "10s",
        "--dsn",
        pg_dsn,
        "--json",
    )
    assert r.exit_code == 0 and json.loads(r.stdout)["state"] == "delayed"
    r = cli("enqueue", "nope", "--app", app_module, "--dsn", pg_dsn)
    assert r.exit_code == 3 and "X_UNKNOWN_JOB" in r.stderr
    r = cli("enqueue", "zeta_report", "--app", app_module, "--delay", "soon", "--dsn", pg_dsn)
    assert r.exit_code == 1 and "X_INVALID_ARGUMENT" in r.stderr


def test_enqueue_and_describe_read_the_app_from_jobs_app_as_backfill_does(
    app_module: str, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JOBS_APP", raising=False)
    r = cli("enqueue", "zeta_report", "--input", '{"day": 2}', "--dsn", pg_dsn)
    assert r.exit_code == 1 and "X_WORKER_TARGET" in r.stderr and "$JOBS_APP is not set" in r.stderr
    assert "fix: jobsctl enqueue zeta_report --app myapp.jobs" in r.stderr
    r = cli("describe")
    assert r.exit_code == 1 and "fix: jobsctl describe --app myapp.jobs" in r.stderr
    monkeypatch.setenv("JOBS_APP", app_module)
    r = cli("enqueue", "zeta_report", "--input", '{"day": 2}', "--dsn", pg_dsn, "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["state"] == "ready"
    r = cli("describe")
    assert r.exit_code == 0 and [m["name"] for m in json.loads(r.stdout)] == ["Alpha_mail", "zeta_report"]


def test_why_reads_a_queue_a_job_and_refuses_a_mistyped_id_or_queue(pg_dsn: str) -> None:
    (dead,) = seed(pg_dsn, JobState.DEAD, queue="billing")
    r = cli("why", "billing", "--dsn", pg_dsn)
    assert (
        r.exit_code == 0
        and "Nothing holds queue billing back: no job waits in it (no live worker serves it)." in r.stdout
    )
    r = cli("why", dead.id[-12:], "--dsn", pg_dsn)
    assert r.exit_code == 0 and "[dead]" in r.stdout
    typo = dead.id[-12:-1] + ("0" if dead.id[-1] != "0" else "1")
    r = cli("why", typo, "--dsn", pg_dsn)
    assert r.exit_code == 3 and "X_NOT_FOUND" in r.stderr and f"did you mean {dead.id}" in r.stderr
    r = cli("why", "deadbeefcafe", "--dsn", pg_dsn, "--json")
    assert r.exit_code == 3 and json.loads(r.stderr)["error"]["code"] == "X_NOT_FOUND" and r.stdout == ""
    r = cli("why", "biling", "--dsn", pg_dsn)
    assert r.exit_code == 1 and "X_UNKNOWN_QUEUE" in r.stderr and "did you mean 'billing'" in r.stderr
    assert "fix: jobsctl why billing" in r.stderr


def test_outbox_prints_relay_ids_and_errors_as_they_are(pg_dsn: str) -> None:
    """A relay's id (its host name) and a publish's error are data: never Rich markup or emoji codes."""
    from engine import Engine, Enqueue, job
    from engine.testing import Factory

    @job(name="confirm_order", queue="mail", idempotency_key=lambda inp: f"order:{inp['order']}")
    async def confirm(ctx, inp):  # type: ignore[no-untyped-def]
        return None

    async def go() -> list[str]:
        f = Factory.of(Engine(PostgresDriver(pg_dsn)))
        async with f.app_transaction() as tx:
            staged = await f.stage(tx, Enqueue(confirm, {"order": 1}), Enqueue(confirm, {"order": 2}))
        claim = await f.relay_claim("relay:x:1:[bold]ok", limit=1)
        await f.relay_failed(claim, "X_DB: value [waiting] refused :x:")
        await f.close()
        return staged

    failing, behind = asyncio.run(go())
    out = cli("outbox", "--dsn", pg_dsn)
    assert (
        out.exit_code == 0 and "relay:x:1:[bold]ok" in out.stdout and "X_DB: value [waiting] refused :x:" in out.stdout
    )
    why = cli("outbox", "--dsn", pg_dsn, "--why", behind)
    assert why.exit_code == 0 and why.stdout.startswith(f"{behind} [waiting] behind row {failing}")
    assert "relay:x:1:[bold]ok" in why.stdout
