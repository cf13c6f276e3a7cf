"""The Backfills screen's actions, each through the engine's BackfillControl (via the Source):
start a dry run, start a write pass, force a rerun, retry a failed pass, cancel a running one.

A start first reads the gate it would meet (a read, allowed read-only too): a refusal is shown at
once with its code, cause and fix, and nothing is asked. Otherwise the confirm dialog says exactly
what will happen (dry run or write, the environment, forced or not); only then does the engine act,
checking every gate again (a start that lost a race is refused the same way). Every action is
audited: the ledger row names who started a pass, the job's history who cancelled or retried it
(with the note given in the dialog), and the session's activity log lists it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import work

from console.format import clean, short_id
from console.messages import ActionFailed, ActionSucceeded
from console.screens.backfill_text import HERE, own_live
from console.screens.confirm import LEFT_ALONE, Confirmed, ConfirmScreen, ResultScreen
from console.screens.modal import ask
from engine.errors import JobsError

if TYPE_CHECKING:
    from console.screens.hosts import BackfillHost

RETRYABLE = ("failed", "cancelled", "stalled")


def retryable(v: Any) -> bool:
    """Whether x can continue the row's latest pass: it failed, was cancelled or stalled."""
    return v.last is not None and v.last.status in RETRYABLE


def start_body(v: Any, *, write: bool, force: bool, console_env: str) -> Text:
    name, env = (clean(v.name, limit=40), "bold"), (clean(v.environment, limit=20), "bold")
    pace = f"{v.batch_size:,} rows a batch, " + (
        "as fast as it goes" if v.rate is None else f"{v.rate:g} batches a second"
    )
    if not write:
        t = Text.assemble(
            "Start a ",
            ("DRY RUN", "bold"),
            " of ",
            name,
            " in ",
            env,
            f": it reads every batch its source selects ({pace}) and counts them. It writes nothing, "
            "and it does not make the backfill applied.",
        )
    elif force:
        done = v.applied
        t = Text.assemble(
            ("FORCE", "bold red"),
            " a ",
            ("WRITE", "bold red"),
            " rerun of ",
            name,
            " in ",
            env,
            f", which completed as run {short_id(done.id)}: it updates every row its source "
            f"still selects ({pace}) and writes a NEW ledger row; the completed one is never edited."
            if done
            else f", which has no completed pass there: it updates every row its source selects ({pace}), "
            "as a write pass (w) does.",
        )
    else:
        t = Text.assemble(
            "Start a ",
            ("WRITE", "bold red"),
            " pass of ",
            name,
            " in ",
            env,
            f": it updates every row its source selects ({pace}), committing batch by batch. "
            f"When it completes, the backfill is applied in {clean(v.environment, limit=20)}.",
        )
    if v.environment != console_env:
        t.append(
            f"\n\n{clean(v.environment, limit=20)} is not this console's environment ({clean(console_env, limit=20)}): "
            "the pass is recorded for it and runs on the workers serving its queue on this database.",
            style="yellow",
        )
    t.append("\n\nThe ledger names you as its starter. c cancels it; x continues it if it stops.", style="dim")
    return t


def refusal(err: JobsError | Any, *, keys: bool = False) -> Text:
    """``keys``: name this screen's key for the fix where it has one (not in read-only mode)."""
    t = Text(clean(err.code, limit=60), style="bold")
    t.append(f"\n{clean(err.cause, limit=400)}\n\nfix: ")
    if keys and err.code in HERE:
        t.append(HERE[err.code], style="bold")
        t.append(f" (or: {clean(err.fix, limit=200)})", style="dim")
    else:
        t.append(clean(err.fix, limit=200), style="bold")
    return t


class BackfillFlows:
    """Mixed into the BackfillsScreen; ``self`` is that screen (hosts.BackfillHost)."""

    def _refused(self: BackfillHost, title: str, err: Any) -> Awaitable[Any]:
        self.post_message(ActionFailed(f"{err.code}: {err.cause}", err.fix))
        return ask(self, ResultScreen(title, refusal(err, keys=not self.source.read_only), failed=True))

    async def _run(self: BackfillHost, title: str, call: Callable[[Confirmed], Awaitable[str]], c: Confirmed) -> None:
        try:
            summary = await call(c)
        except JobsError as err:
            await self._refused(f"{title}: refused", err)
        except Exception as exc:  # a lost connection mid-action: say so, never crash
            self.post_message(ActionFailed(f"{type(exc).__name__}: {exc}"))
            self.notify(
                clean(f"{type(exc).__name__}: {exc}", limit=200),
                title="Action failed; it may not have landed",
                severity="error",
                timeout=8,
            )
        else:
            self.post_message(ActionSucceeded(summary))
            self.notify(clean(summary, limit=300), title="Done", timeout=5)
        self.reload()

    async def _confirm(self: BackfillHost, title: str, body: Text, verb: str, *, note: bool) -> Confirmed | None:
        confirmed = await ask(self, ConfirmScreen(title, body, verb=verb, note=note))
        if confirmed is None:
            self.notify(LEFT_ALONE, timeout=3)
        return confirmed

    @work(group="action", exclusive=True, exit_on_error=False)
    async def start_flow(self: BackfillHost, write: bool, force: bool) -> None:
        v = self.selected()
        if v is None:
            return
        what = "Forced rerun" if force else ("Write pass" if write else "Dry run")
        try:
            gate = await self.source.backfill_gate(v.name, v.environment, write=write, force=force)
        except Exception as exc:
            title, detail = self.source.describe_failure(exc)
            self.notify(detail, title=f"Could not read the gates: {title}", severity="error", timeout=8)
            return
        if gate is not None:
            await self._refused(f"{what} of {clean(v.name, limit=40)} refused", gate)
            return
        body = start_body(v, write=write, force=force, console_env=self.source.environment)
        verb = f"{'Force ' if force else ''}{'write' if write else 'dry run'} in {clean(v.environment, limit=16)}"
        title = f"{what} of {clean(v.name, limit=40)} in {clean(v.environment, limit=20)}?"
        confirmed = await self._confirm(title, body, verb.capitalize(), note=False)  # the ledger row keeps no note
        if confirmed is None:
            return
        name, env = v.name, v.environment

        async def call(c: Confirmed) -> str:
            s = await self.source.start_backfill(name, env, write=write, force=force)
            mode = ("forced write" if s.forced else "write") if not s.dry_run else "dry run"
            return f"{mode.capitalize()} pass of {s.name} enqueued in {s.environment} as job {short_id(s.job_id)} (run {short_id(s.run_id)})."

        await self._run(what, call, confirmed)

    @work(group="action", exclusive=True, exit_on_error=False)
    async def cancel_flow(self: BackfillHost) -> None:
        v = self.selected()
        if v is None:
            return
        if not own_live(v):
            elsewhere = " (its live pass is another environment's: select that row)" if v.live_job_id else ""
            self.notify(
                f"No pass of {clean(v.name, limit=40)} runs in {clean(v.environment, limit=20)}{elsewhere}.", timeout=5
            )
            return
        last = v.last
        body = Text.assemble(
            "Cancel the running ",
            (f"{'dry run' if last.dry_run else 'WRITE'} pass", "bold"),
            " of ",
            (clean(v.name, limit=40), "bold"),
            " in ",
            (clean(v.environment, limit=20), "bold"),
            f" (job {short_id(v.live_job_id)}): its rate wait and its current batch see the cancel at once (that batch is "
            f"rolled back); the ledger row says cancelled. The rows swept so far ({last.swept:,} when this opened) stay "
            "swept, and x continues it from the batch it stopped on.",
        )
        confirmed = await self._confirm("Cancel this pass?", body, f"Cancel pass {short_id(v.live_job_id)}", note=True)
        if confirmed is None:
            return
        name, env = v.name, v.environment

        async def call(c: Confirmed) -> str:
            r = await self.source.cancel_backfill(name, env, note=c.note)
            if not r.changed:
                return f"No change: {r.reason}."
            return f"Pass {short_id(r.job_id)} of {name} in {env} cancelled: {r.reason}."

        await self._run("Cancel", call, confirmed)

    @work(group="action", exclusive=True, exit_on_error=False)
    async def retry_flow(self: BackfillHost) -> None:
        v = self.selected()
        if v is None:
            return
        last = v.last
        if last is None or last.status not in RETRYABLE:
            said = "has no pass" if last is None else f"last pass is {last.status}"
            self.notify(
                f"Nothing to retry: {clean(v.name, limit=40)} in {clean(v.environment, limit=20)} {said}.", timeout=5
            )
            return
        body = Text.assemble(
            "Continue the ",
            (last.status, "bold"),
            f" {'dry run' if last.dry_run else 'write'} pass of ",
            (clean(v.name, limit=40), "bold"),
            " in ",
            (clean(v.environment, limit=20), "bold"),
            f" (run {short_id(last.id)}, job {short_id(last.job_id or '?')}) from batch ",
            (str(last.batches + 1), "bold"),
            f", the batch it stopped on: its {last.batches:,} finished batches are not read again, and the same "
            "ledger row goes on counting.",
        )
        confirmed = await self._confirm("Retry this pass?", body, f"Retry from batch {last.batches + 1}", note=True)
        if confirmed is None:
            return
        name, env = v.name, v.environment

        async def call(c: Confirmed) -> str:
            r = await self.source.retry_backfill(name, env, note=c.note)
            if not r.changed:
                return f"No change: {r.reason}."
            return f"Pass {short_id(r.job_id)} of {name} in {env} continues from batch {last.batches + 1}."

        await self._run("Retry", call, confirmed)
