"""`jobsctl retry | cancel | discard | pause | resume | event | enqueue | workers drain`: the operator
actions, each one engine.actions' Operator (the same the Python API and the console call). Each
is audited (who: --actor, default $JOBS_ACTOR or user@host); a job is named by its id or a
unique short id (6+ hex digits of its head or tail); a bulk action prints its dry run and asks
before it changes anything (--yes skips the question). Exit 0: done; 5: a clear no-op."""

from __future__ import annotations

import json
import shlex
import sys
from typing import Any

import typer

from engine.cli import app, fail
from engine.cli.acting import (
    ACTOR_HELP,
    EXIT_NOOP,
    EXIT_STOPPED,
    ID_HELP,
    confirmed,
    dry_run_only,
    no_id,
    not_confirmed,
    operator,
    progress_line,
    result,
    stopped_by_signal,
    typed,
)
from engine.cli.admin import APP_HELP, DSN_HELP, JSON_HELP, NOTE_HELP, group_given
from engine.cli.family import retry_trees, with_children
from engine.cli.reads import FILTER_HELP, FilteredCommand, console, emit, run, workers_app
from engine.cli.waits import TIMEOUT_HELP, refuse_waiting_in_memory, stopped_following, wait_for, wait_limit
from engine.durations import parse_duration
from engine.errors import X_INVALID_ARGUMENT, JobsError


def _json_arg(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        cause = (
            f"{what} is JSON nested too deep to read ({len(text):,} characters)"
            if isinstance(exc, RecursionError)
            else f"{what} is not JSON: {exc}"
        )
        raise JobsError(X_INVALID_ARGUMENT, cause=cause, fix=f"{what} '{{\"invoice\": 42}}'") from None


_WHAT = {"retry": "would run again", "cancel": "would be cancelled", "discard": "would be deleted"}


def _bulk(
    action: str,
    filters: list[str],
    yes: bool,
    rate: float | None,
    note: str | None,
    dsn: str | None,
    actor: str | None,
    json_out: bool,
    children: bool = False,
    tenant: str | None = None,
) -> None:
    from engine.introspect import describe_filter, parse_filter

    typed_filters, filters = filters, filters + ([f"tenant={tenant}"] if tenant else [])
    from engine.options import finite_positive

    try:
        where = parse_filter(filters)
        if rate is not None and not finite_positive(rate):  # before the dry run and its question
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"--rate {rate:g} must be a positive, finite number of jobs a second",
                fix=" ".join(
                    ["jobsctl", action, "--all", *(["--children"] if children else []), "--rate", "50"]
                    + [f"-f {shlex.quote(w)}" for w in filters]
                ),
            )
    except JobsError as err:
        fail(err, as_json=json_out)
    plan = run(dsn, json_out, lambda e: operator(e, actor).plan(action, where))  # type: ignore[arg-type]
    if not json_out:
        out = console()
        out.print(f"dry run: {action} {plan.matched} jobs matching {describe_filter(where)}")
        for g in plan.groups:
            out.print(
                f"  {g.count:>8}  stop={g.stop_reason or '-'}  code={g.error_code or '-'}  tenant={g.tenant or '-'}"
            )
        if action == "retry":
            out.print(
                f"  {plan.deduped} would dedupe away (a live job holds their key); {plan.would_change} would run again"
            )
            if children:
                out.print("  each with the dead jobs below it, one job at a time, newest first")
            elif plan.replays:
                again = " ".join(f"-f {f}" for f in filters)
                out.print(
                    f"  {plan.replays} of them waited for jobs that did not complete: retried this way, each "
                    f"replays that answer (e.g. {plan.replay_example}); to run their waits again: "
                    f"jobsctl retry --all --children {again}".rstrip()
                )
        else:
            out.print(f"  {plan.would_change} {_WHAT[action]}")
    if plan.matched == 0:
        if json_out:
            emit({"plan": plan, "result": None})
        raise typer.Exit(EXIT_NOOP)
    dry_run_only(as_json=json_out, dry_run=lambda: emit({"plan": plan, "result": None}))  # read-only: no change
    if not yes:
        # --json is for scripts: they say --yes; a person answers the question.
        below = " and the dead jobs below them" if children else ""
        if json_out or not confirmed(f"{action} {plan.would_change} jobs{below}?"):
            head = ["jobsctl", action, "--all", *(["--children"] if children else [])]
            said = typed(*head, filters=typed_filters, tenant=tenant, rate=rate, note=note, actor=actor, dsn=dsn)
            not_confirmed(said, as_json=json_out)
    if children:
        return retry_trees(where, plan, rate, note, dsn, actor, json_out)
    told = None if json_out else progress_line(action)
    res = run(
        dsn,
        json_out,
        lambda e: stopped_by_signal(
            lambda stop: operator(e, actor).bulk(
                action, where, note=note, per_second=rate, progress=told, stop=stop, plan=plan
            )
        ),
    )
    if told is not None:
        sys.stderr.write("\n")
    if json_out:
        emit({"plan": plan, "result": res})
    elif res.stopped:
        console().print(
            f"{action}: stopped by a signal: {res.changed} changed, {res.skipped} skipped; the rest are as they were"
        )
    else:
        console().print(f"{action}: {res.changed} changed, {res.skipped} skipped")
    if res.stopped:
        raise typer.Exit(EXIT_STOPPED)


def _one_job(
    command: str, job_id: str, filters: list[str], rate: float | None, yes: bool, children: bool, json_out: bool
) -> None:
    """Refuse what only --all (or --children) reads, given to the action on one job: dropped, it
    would leave the operator believing a filter narrowed or a rate paced what ran. The action on
    one job asks nothing (its audit entry is the record), so --yes would answer no question."""
    asks = "--all" if command == "discard" else "--all or --children"  # discard takes no --children
    every = " ".join(f"--filter {shlex.quote(f)}" for f in filters) or "--filter ..."  # each one given
    given = [
        (bool(filters), "--filter narrows --all", f"jobsctl {command} --all {every}"),
        (rate is not None, "--rate paces --all", f"jobsctl {command} --all {every} --rate {rate or 0:g}"),
        (
            yes and not children,
            f"--yes skips the confirmation of {asks}; `jobsctl {command} ID` acts at once and asks none",
            f"jobsctl {command} {job_id}",
        ),
    ]
    for present, what, fix in given:
        if present:
            cause = f"{what}; with a job's id it would do nothing"
            fail(JobsError(X_INVALID_ARGUMENT, cause=cause, fix=fix), as_json=json_out)


@app.command(cls=FilteredCommand)
def retry(
    job_id: str = typer.Argument(None, help=f"{ID_HELP} of a dead job (or --all with --filter)"),
    from_step: str = typer.Option(None, "--from-step", help="re-run from this step; earlier steps replay"),
    all_: bool = typer.Option(False, "--all", help="every dead job matching --filter"),
    filters: list[str] = typer.Option([], "--filter", "-f", help=FILTER_HELP),
    yes: bool = typer.Option(False, "--yes", help="skip the confirmation"),
    rate: float = typer.Option(None, "--rate", help="pace a bulk retry: at most this many jobs a second"),
    children: bool = typer.Option(
        False,
        "--children",
        help="and every dead job below it (those its steps enqueued or waited for, and theirs), its wait on them "
        "run again: a dry run, then a confirmation unless --yes; with --all, each matching job so",
    ),
    tenant: str = typer.Option(None, "--tenant", help="act only on this tenant's jobs"),
    note: str = typer.Option(None, "--note", help="the incident note kept in the audit"),
    actor: str = typer.Option(None, "--actor", help=ACTOR_HELP),
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Retry a dead job (attempts reset), from a step, with the dead jobs below it, or by filter."""
    if all_:
        if job_id or from_step:
            fail(
                JobsError(
                    X_INVALID_ARGUMENT,
                    cause="--all takes a --filter, not an id or --from-step",
                    fix="jobsctl retry --all --filter code=X_SMTP",
                ),
                as_json=json_out,
            )
        return _bulk("retry", filters, yes, rate, note, dsn, actor, json_out, children=children, tenant=tenant)
    if not job_id:
        fail(no_id("retry", filters), as_json=json_out)
    _one_job("retry", job_id, filters, rate, yes, children, json_out)
    if children and from_step:
        fail(
            JobsError(
                X_INVALID_ARGUMENT,
                cause="--children chooses the step itself (the wait on the jobs it retries): drop --from-step",
                fix=f"jobsctl retry {job_id} --children",
            ),
            as_json=json_out,
        )
    if children:
        return with_children("retry", job_id, yes, tenant, note, dsn, actor, json_out)
    if from_step is not None:  # an empty one is the engine's refusal, never a plain retry
        res = run(
            dsn, json_out, lambda e: operator(e, actor).retry_from_step(job_id, from_step, tenant=tenant, note=note)
        )
    else:
        res = run(dsn, json_out, lambda e: operator(e, actor).retry(job_id, tenant=tenant, note=note))
    result(res, json_out)


@app.command(cls=FilteredCommand)
def cancel(
    job_id: str = typer.Argument(None, help=f"{ID_HELP} (or --all with --filter)"),
    all_: bool = typer.Option(False, "--all", help="every live job matching --filter"),
    filters: list[str] = typer.Option([], "--filter", "-f", help=FILTER_HELP),
    yes: bool = typer.Option(False, "--yes", help="skip the confirmation"),
    rate: float = typer.Option(None, "--rate", help="pace a bulk cancel: at most this many jobs a second"),
    children: bool = typer.Option(
        False,
        "--children",
        help="and every live job below it (those its steps enqueued or waited for, and theirs): a dry run, then "
        "a confirmation unless --yes",
    ),
    tenant: str = typer.Option(None, "--tenant", help="act only on this tenant's jobs"),
    note: str = typer.Option(None, "--note", help=NOTE_HELP),
    actor: str = typer.Option(None, "--actor", help=ACTOR_HELP),
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Cancel a live job (a running one stops at its next lease renewal), or all matching a filter."""
    if all_:
        if children:
            fail(
                JobsError(
                    X_INVALID_ARGUMENT,
                    cause="--children cancels the jobs below one job: give its id, not --all",
                    fix="jobsctl cancel JOB_ID --children",
                ),
                as_json=json_out,
            )
        if job_id:
            fail(
                JobsError(
                    X_INVALID_ARGUMENT,
                    cause="--all takes a --filter, not an id",
                    fix="jobsctl cancel --all --filter queue=imports",
                ),
                as_json=json_out,
            )
        return _bulk("cancel", filters, yes, rate, note, dsn, actor, json_out, tenant=tenant)
    if not job_id:
        fail(no_id("cancel", filters), as_json=json_out)
    _one_job("cancel", job_id, filters, rate, yes, children, json_out)
    if children:
        return with_children("cancel", job_id, yes, tenant, note, dsn, actor, json_out)
    result(run(dsn, json_out, lambda e: operator(e, actor).cancel(job_id, tenant=tenant, note=note)), json_out)


def _pause(
    queue: str, paused: bool, note: str | None, actor: str | None, dsn: str | None, json_out: bool, create: bool = False
) -> None:
    async def call(e: Any) -> Any:
        o = operator(e, actor)
        return await (o.pause(queue, note=note, create=create) if paused else o.resume(queue, note=note))

    p = run(dsn, json_out, call)
    if json_out:
        emit(p)
    else:
        console().print(f"queue {p.queue}: {'paused' if p.paused else 'running'}" + ("" if p.changed else " (already)"))
    if not p.changed:
        raise typer.Exit(EXIT_NOOP)


@app.command()
def pause(
    queue: str = typer.Argument(...),
    create: bool = typer.Option(False, "--create", help="pause a queue nothing names yet (before its first job)"),
    note: str = typer.Option(None, "--note", help=NOTE_HELP),
    actor: str = typer.Option(None, "--actor", help=ACTOR_HELP),
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Pause a queue: durable, shown in `jobsctl queues`; workers claim nothing more from it.

    A queue no job, worker or pause names is refused with "did you mean" unless --create."""
    _pause(queue, True, note, actor, dsn, json_out, create)


@app.command()
def resume(
    queue: str = typer.Argument(...),
    note: str = typer.Option(None, "--note", help=NOTE_HELP),
    actor: str = typer.Option(None, "--actor", help=ACTOR_HELP),
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Resume a paused queue; its pause row goes, so a queue paused by mistake leaves nothing behind.

    The audit log keeps the resume, who and when, and its --note (`jobsctl audit --target QUEUE`)."""
    _pause(queue, False, note, actor, dsn, json_out)


@app.command(cls=FilteredCommand)
def discard(
    job_id: str = typer.Argument(None, help=f"{ID_HELP} of a dead job (or --all with --filter)"),
    all_: bool = typer.Option(False, "--all", help="every dead job matching --filter"),
    filters: list[str] = typer.Option([], "--filter", "-f", help=FILTER_HELP),
    yes: bool = typer.Option(False, "--yes", help="skip the confirmation"),
    rate: float = typer.Option(None, "--rate", help="pace a bulk discard: at most this many jobs a second"),
    tenant: str = typer.Option(None, "--tenant", help="act only on this tenant's jobs"),
    note: str = typer.Option(None, "--note", help="the incident note kept in the audit"),
    actor: str = typer.Option(None, "--actor", help=ACTOR_HELP),
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Discard a dead letter, or every dead job matching a filter after a dry run.

    The row is deleted; a `discarded` history entry keeps who, when, the note and what it was."""
    if all_:
        if job_id:
            fail(
                JobsError(
                    X_INVALID_ARGUMENT,
                    cause="--all takes a --filter, not an id",
                    fix="jobsctl discard --all --filter code=X_CARD_DECLINED",
                ),
                as_json=json_out,
            )
        return _bulk("discard", filters, yes, rate, note, dsn, actor, json_out, tenant=tenant)
    if not job_id:
        fail(no_id("discard", filters), as_json=json_out)
    _one_job("discard", job_id, filters, rate, yes, False, json_out)
    result(run(dsn, json_out, lambda e: operator(e, actor).discard(job_id, tenant=tenant, note=note)), json_out)


@workers_app.command("drain")
def drain(
    ctx: typer.Context,
    worker_id: str = typer.Argument(..., help="the worker's id (jobsctl workers lists them)"),
    note: str = typer.Option(None, "--note", help="the incident note kept with the request"),
    actor: str = typer.Option(None, "--actor", help=ACTOR_HELP),
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Ask a running worker to stop claiming and drain.

    It sees the request at its next heartbeat, lets in-flight work finish within its grace,
    releases the rest and exits."""
    given, json_out = group_given(ctx, dsn, json_out)
    r = run(given, json_out, lambda e: operator(e, actor).drain_worker(worker_id, note=note))
    if json_out:
        emit(r)
    else:
        when = f"{r.requested_at:%Y-%m-%d %H:%M:%S}"
        console().print(
            f"worker {r.worker}: asked to drain by {r.requested_by} at {when}" + ("" if r.changed else " (already)")
        )
    if not r.changed:
        raise typer.Exit(EXIT_NOOP)


@app.command()
def event(
    name: str = typer.Argument(...),
    payload: str = typer.Option("{}", "--payload", help="a JSON object"),
    tenant: str = typer.Option(None, "--tenant", help="only this tenant's waits take it"),
    actor: str = typer.Option(None, "--actor", help=ACTOR_HELP),
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Send a durable event; the suspended waits it matches wake now."""
    try:
        body = _json_arg(payload, "--payload")
        if body is None:  # the Python API's "no payload"; typed here it is JSON that is not an object
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause="--payload null is not a JSON object",
                fix=f"jobsctl event {name} --payload '{{}}'",
            )
    except JobsError as err:
        fail(err, as_json=json_out)
    sent = run(dsn, json_out, lambda e: operator(e, actor).send_event(name, body, tenant=tenant))
    if json_out:
        return emit(sent)
    console().print(f"event {sent.name} {sent.id}: woke {sent.woken}")


@app.command()
def enqueue(
    name: str = typer.Argument(..., help="a declared job's name"),
    app_module: str = typer.Option(None, "--app", help=APP_HELP, show_default=False),
    input_: str = typer.Option("{}", "--input", help="the job's input as JSON"),
    tenant: str = typer.Option(
        None, "--tenant", help="the tenant the job belongs to (its idempotency keys are its own)"
    ),
    delay: str = typer.Option(None, "--delay", help="e.g. 10s, 5m, 1h"),
    wait: bool = typer.Option(False, "--wait", help="then wait until it has settled (as jobsctl wait does)"),
    timeout: str = typer.Option(None, "--timeout", help=TIMEOUT_HELP),
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Enqueue one job of a declared name; answers its id and whether it deduped.

    With --wait, then how it ended (as jobsctl wait): exit 0 completed, 6 dead or cancelled, 7 still live."""
    from engine.cli.worker import app_target, load_target

    try:
        target = app_target(app_module, f"jobsctl enqueue {name} --app myapp.jobs")
        handle = load_target(target, f"jobsctl enqueue {shlex.quote(name)} --app {{target}}").get(name)
        inp = _json_arg(input_, "--input")
        secs = None if delay is None else parse_duration(delay)
        limit = wait_limit(wait, timeout)
        if wait:
            refuse_waiting_in_memory(dsn, name)
    except JobsError as err:
        fail(err, as_json=json_out)
    res = run(dsn, json_out, lambda e: e.aenqueue(handle, inp, tenant=tenant, delay=secs))
    try:  # from here on the job exists: a Ctrl-C at any instant says it goes on, and how to follow it
        if not json_out:
            console().print(
                f"{res.id} {'deduped (a live job holds the key)' if res.deduped else 'enqueued'} "
                f"state={res.state.value}"
            )
        if wait:  # a deduped enqueue waits for the live job that holds the key
            return wait_for([res.id], limit, tenant, dsn, json_out, enqueued=res)
    except KeyboardInterrupt:
        if not wait:
            raise
        raise typer.Exit(
            stopped_following(f"stopped waiting for job {res.id}; it goes on", [res.id], json_out)
        ) from None
    if json_out:
        emit(res)
