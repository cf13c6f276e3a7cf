"""`jobsctl audit`: the audit log (engine/audit.py), newest first, one line an entry: its id, when
(UTC, and how long ago), who, what, on what, and its note with a short detail. A full page ends
with the command that reads the next one (--before the page's last id, the same filters); --json
prints every field of every entry. Every option is checked before the database is reached."""

from __future__ import annotations

import shlex
from datetime import UTC, datetime, timedelta
from typing import Any

import typer

from engine.audit import LONGEST_PAGE, PAGE, check_action, detail_words
from engine.cli import app, fail
from engine.cli.acting import operator
from engine.cli.admin import DSN_HELP, JSON_HELP
from engine.cli.reads import BUDGET_HELP, _when, clip, console, emit, run
from engine.durations import duration, parse_duration
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.text import check_tenant, printable

SINCE_HELP = "only entries from then on: a duration back from now (1h, 30m, 2d) or an ISO 8601 time with its zone"
TENANT_HELP = "only the entries of this tenant's jobs and events (the fleet's actions have no tenant)"
BUDGET = 2.0  # the read's statement budget by default, as every read command's
GAP = 2  # spaces between two columns


def short(job_id: str) -> str:
    """A job's id as a narrow table shows it: its tail, a short id every command takes."""
    return job_id[-12:] if len(job_id) > 12 else job_id


def since_of(text: str | None) -> timedelta | datetime | None:
    """--since: a duration back from now (a timedelta, taken from the engine's clock when the log
    is read) or an ISO 8601 time with its zone; anything else refused."""
    if text is None:
        return None
    try:
        back = timedelta(seconds=parse_duration(text, "--since"))
        datetime.now(UTC) - back  # noqa: B018  (an OverflowError: it reaches back before the year 1)
        return back
    except (OverflowError, ValueError):
        raise JobsError(
            X_INVALID_ARGUMENT, cause=f"--since {text} reaches back before the year 1", fix="jobsctl audit --since 30d"
        ) from None
    except JobsError:
        pass  # not a duration: an ISO time, then
    try:
        at = datetime.fromisoformat(text.strip())
    except ValueError:
        at = None
    if at is None or at.tzinfo is None:
        zone = " without its zone" if at is not None else ""
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"--since {text!r}{zone} is neither a duration back from now (1h, 30m, 2d) nor an ISO 8601 time "
            "with its zone (2024-05-01T09:00:00+00:00)",
            fix="jobsctl audit --since 1h",
        )
    return at


def check_budget(budget: float) -> None:
    from engine.options import timeout_rule, timeout_seconds

    if not timeout_seconds(budget):
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"--budget {budget:g} must be {timeout_rule()}: it bounds the read's statements",
            fix=f"jobsctl audit --budget {BUDGET:g}",
        )


def said(e: Any) -> str:
    """An entry's note and the short words of its detail, on one line."""
    words = detail_words(e.detail, short)
    if e.tenant is not None:
        words.append(f"tenant {e.tenant}")
    return " · ".join(p for p in (e.note, ", ".join(words)) if p)


def next_page(last: int, given: list[tuple[str, str | None]]) -> str:
    """The command that reads the page after one whose last entry is ``last``: the same options."""
    from engine.drivers.postgres.dsn import shown_dsn

    words = ["jobsctl", "audit", "--before", str(last)]
    for flag, value in given:
        if value is not None:
            shown = shown_dsn(value) if flag == "--dsn" and not value.strip().startswith("memory:") else value
            words += [flag, shown]
    return shlex.join(words)


def widths(rows: list[list[str]], heads: tuple[str, ...], room: int) -> list[int]:
    """Each column's width, the line at most ``room`` wide where it can be: the target, the note
    and the actor give way in turns, a step at a time (the target to 24, the note to 24, the actor
    to 16, then to 12, 12 and 8, then to 8, 8 and 6); the id, the time and the action never do."""
    from rich.cells import cell_len

    natural = [max([cell_len(h)] + [cell_len(r[i]) for r in rows]) for i, h in enumerate(heads)]
    out = [*natural]
    for least in ((24, 24, 16), (12, 12, 8), (8, 8, 6)):
        for col, floor in zip((5, 6, 3), least, strict=True):
            over = sum(out) + GAP * (len(out) - 1) - room
            if over > 0:
                out[col] = max(min(floor, natural[col]), out[col] - over)
    return out


def print_page(
    entries: list[Any], now: datetime, limit: int, given: list[tuple[str, str | None]], *, filtered: bool
) -> None:
    """One line an entry, in columns: what does not fit the terminal is cut at a word with an
    ellipsis (clip), the id, the time and the action never."""
    from rich.cells import cell_len, set_cell_size  # rich on first print, as every table's
    from rich.text import Text

    out = console()
    if not entries:
        out.print("no entry of the audit log matches" if filtered else "the audit log has no entry")
        return
    heads = ("id", "when (UTC)", "ago", "actor", "action", "target", "note")

    def rows_of(jobs_short: bool) -> list[list[str]]:
        rows = []
        for e in entries:
            at = e.at.astimezone(UTC)
            target = short(e.target) if jobs_short and e.action.startswith("job.") else e.target
            age = duration((now - at).total_seconds())
            cells = [str(e.id), _when(at, now), age, e.actor or "-", e.action, target, said(e)]
            rows.append([printable(clip(c, 200)) for c in cells])  # a control character shown escaped, as printed
        return rows

    # A job's whole id (what --target takes) where the line has room for it, else its tail.
    rows = rows_of(jobs_short=False)
    if sum(widths(rows, heads, 10**6)) + GAP * (len(heads) - 1) > out.width:
        rows = rows_of(jobs_short=True)
    sizes = widths(rows, heads, out.width)

    def line(cells: list[str] | tuple[str, ...]) -> str:
        shown = [clip(c, n) if cell_len(c) > n else c for c, n in zip(cells, sizes, strict=True)]
        shown[0] = shown[0].rjust(sizes[0])
        return (" " * GAP).join(set_cell_size(c, n) for c, n in zip(shown, sizes, strict=True)).rstrip()

    out.print(Text(line(heads), style="bold"))
    for r in rows:
        out.print(line(r))
    if len(entries) == limit:
        out.print(f"older entries: {next_page(entries[-1].id, given)}")


def entry_json(e: Any) -> dict[str, Any]:
    return {
        "id": e.id,
        "at": e.at.astimezone(UTC).isoformat(),
        "actor": e.actor,
        "action": e.action,
        "target": e.target,
        "tenant": e.tenant,
        "note": e.note,
        "detail": e.detail,
    }


@app.command()
def audit(
    target: str = typer.Option(
        None, "--target", help="what was acted on: a queue, a job's whole id, a worker, a task, a backfill"
    ),
    actor: str = typer.Option(None, "--actor", help="who acted, as the log names them (user@host, $JOBS_ACTOR)"),
    action: str = typer.Option(None, "--action", help="one kind of action: queue.pause, job.retry, bulk.cancel, ..."),
    since: str = typer.Option(None, "--since", help=SINCE_HELP),
    before: int = typer.Option(None, "--before", help="only entries older than this id (the next page)"),
    limit: int = typer.Option(PAGE, "--limit", help=f"entries per page (1 to {LONGEST_PAGE})"),
    tenant: str = typer.Option(None, "--tenant", help=TENANT_HELP),
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
    budget: float = typer.Option(BUDGET, "--budget", help=BUDGET_HELP),
) -> None:
    """The audit log, newest first: every operator action that changed something, who took it and why."""
    try:
        back = since_of(since)
        check_action(action)
        check_budget(budget)
        check_tenant(tenant)  # its fix, as every command's, the command as typed (engine/cli for_this_command)
    except JobsError as err:
        fail(err, as_json=json_out)

    async def call(e: Any) -> tuple[list[Any], datetime, datetime | None]:
        now = e.clock.now().astimezone(UTC)  # the engine's clock: the one its entries are written on
        cutoff = now - back if isinstance(back, timedelta) else back
        ops = operator(e, None, tenant=tenant, budget=budget)
        read = await ops.audit(limit=limit, before=before, target=target, actor=actor, action=action, since=cutoff)
        return read, now, cutoff

    entries, now, cutoff = run(dsn, json_out, call)
    if json_out:
        return emit([entry_json(e) for e in entries])
    # The next page reads the same window: a duration given is said as the time it reached back to.
    filters: list[tuple[str, str | None]] = [("--target", target), ("--actor", actor), ("--action", action)]
    filters += [("--since", None if cutoff is None else cutoff.isoformat()), ("--tenant", tenant)]
    given = [*filters, ("--limit", None if limit == PAGE else str(limit))]
    given += [("--budget", None if budget == BUDGET else f"{budget:g}"), ("--dsn", dsn)]
    print_page(entries, now, limit, given, filtered=any(v is not None for _, v in filters))
