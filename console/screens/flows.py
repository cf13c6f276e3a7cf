"""The flows screens share: drilling into a job or a queue, and every mutating action.

Each action is one linear worker: (dry run) -> a confirmation modal naming exactly what changes ->
the engine call -> the result shown -> the screen refreshed. Nothing changes unless the operator
confirms; an engine refusal (read-only, wrong state, another tenant) is shown with its fix.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import work

from console import palette
from console.actions import DISCARD_EFFECT
from console.format import clean, short_id, since, stamp
from console.messages import ActionFailed, ActionSucceeded
from console.screens.confirm import LEFT_ALONE, Confirmed, ConfirmScreen
from console.screens.flows_bulk import BulkFlows
from console.screens.modal import ask
from console.screens.steps import StepChooser
from engine.durations import duration
from engine.errors import JobsError
from engine.projections import ActionResult, DrainRequest, JobFilter, JobSummary, QueueStats, WorkerView
from engine.types import LIVE_STATES, JobState

if TYPE_CHECKING:
    from console.screens.hosts import ActionCall, FlowHost


def resume_text(queue: str, q: QueueStats | None, now: datetime) -> Text:
    """What resuming a paused queue undoes (who paused it, when, the note) and what it lets go: the
    ready jobs workers start claiming, and the parked ones that follow as their limits allow."""
    t = Text.assemble("Resume queue ", (clean(queue, limit=40), "bold"), ": workers claim its jobs again.")
    if q is None:
        return t
    if q.paused_by or q.paused_at or q.pause_note:
        t.append("\nPaused")
        if q.paused_by:
            t.append_text(Text.assemble(" by ", (clean(q.paused_by, limit=40), "bold")))
        if q.paused_at:
            t.append(f" {since(q.paused_at, now)} ({stamp(q.paused_at, now)} UTC)")
        t.append(f": “{clean(q.pause_note, limit=200)}”" if q.pause_note else ".")
    jobs = "job" if q.ready.value == 1 else "jobs"
    t.append(f"\n{q.ready} ready {jobs} will start being claimed")
    if q.parked.value:
        t.append(f"; {q.parked} parked follow as their limits allow")
    return t.append(".")


def result_text(r: ActionResult) -> str:
    if not r.changed:
        return f"No change to {short_id(r.job_id)}: {r.reason or r.state.value}."
    msg = f"{r.action.replace('_', ' ')} {short_id(r.job_id)}: {r.previous.value} → {r.state.value}"
    if r.duplicate_of:
        msg += f" (deduped onto live job {short_id(r.duplicate_of)})"
    if r.also:  # a cancel or retry with its children
        n = sum(a.changed for a in r.also)
        done = "cancelled" if r.action == "cancel" else "retried"
        msg += f", and {n:,} job{'s' if n != 1 else ''} below it {done}"
    return msg + "."


def job_named(job_id: str, name: str) -> Text:
    """A job as a confirmation names it: its short id in bold, then its name in brackets."""
    return Text.assemble((short_id(job_id), "bold"), " (", clean(name, limit=40), ")")


class Flows(BulkFlows):
    """Mixed into data screens; ``self`` is a data screen (hosts.FlowHost)."""

    # --- navigation ------------------------------------------------------------------------------

    def open_jobs(self: FlowHost, **where: Any) -> None:
        self.navigate("jobs", where=JobFilter(**where), drill=True)

    def open_job(self: FlowHost, job_id: str) -> None:
        self.navigate("job", job_id=job_id)

    def open_why_job(self: FlowHost, job_id: str) -> None:
        self.navigate("why", job_id=job_id)

    def open_why_queue(self: FlowHost, queue: str) -> None:
        self.navigate("why", queue=queue)

    # --- actions ---------------------------------------------------------------------------------

    @work(group="action", exclusive=True, exit_on_error=False)
    async def confirm_and_run(
        self: FlowHost, title: str, body: Text | str, verb: str, call: ActionCall, *, note: bool = True
    ) -> None:
        await self.confirm_then_run(title, body, verb, call, note=note)

    async def confirm_then_run(
        self: FlowHost, title: str, body: Text | str, verb: str, call: ActionCall, *, note: bool = True
    ) -> None:
        """``note``: offer the incident note; False where the engine's call keeps none."""
        confirmed = await ask(self, ConfirmScreen(title, body, verb=verb, note=note))
        if confirmed is None:
            self.notify(LEFT_ALONE, timeout=3)
            return
        try:
            summary = await call(confirmed)
        except JobsError as err:
            self.post_message(ActionFailed(f"{err.code}: {err.cause}", err.fix))
            self.notify(
                f"{clean(err.cause, limit=200)}\nfix: {clean(err.fix, limit=120)}",
                title=err.code,
                severity="error",
                timeout=8,
            )
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
        if self.is_attached:  # a discarded job's screen went back: nothing left to re-read
            self.reload()

    def retry_job(self: FlowHost, job_id: str, name: str, replayed_dead: int = 0, *, timed_out: bool = False) -> None:
        async def call(c: Confirmed) -> str:
            return result_text(await self.source.retry(job_id, note=c.note))

        body = Text.assemble(
            "Retry dead job ",
            job_named(job_id, name),
            ": it becomes ready now with a fresh attempt budget.",
            (
                f" The {replayed_dead:,} dead jobs it fanned out stay dead and its wait answers them as they"
                " were (X retries them with it)."
                if replayed_dead > 1
                else " The dead job it fanned out stays dead and its wait answers it as it was (X retries it too)."
            )
            if replayed_dead
            else "",
            " Its wait for jobs timed out, and answers that again at once (X runs the wait again)."
            if timed_out
            else "",
        )
        self.confirm_and_run("Retry this job?", body, f"Retry job {short_id(job_id)}", call)

    def cancel_job(self: FlowHost, job_id: str, name: str, state: str, live_below: int = 0) -> None:
        async def call(c: Confirmed) -> str:
            return result_text(await self.source.cancel(job_id, note=c.note))

        body = Text.assemble(
            "Cancel ",
            (state, "bold"),
            " job ",
            job_named(job_id, name),
            ": it becomes cancelled and will not run",
            " (a running handler is signalled to stop)." if state == "running" else ".",
            (
                f" The {live_below:,} live jobs it fanned out keep running (C cancels them with it)."
                if live_below > 1
                else " The live job it fanned out keeps running (C cancels it too)."
            )
            if live_below
            else "",
        )
        self.confirm_and_run("Cancel this job?", body, f"Cancel job {short_id(job_id)}", call)

    async def children_or_say(self: FlowHost, job_id: str) -> list[JobSummary] | None:
        """The jobs below a job, as an action with children reaches them; None, said, when the walk
        was refused (too many below it: the fix names the filter to use)."""
        try:
            return await self.source.children(job_id)
        except JobsError as err:
            self.notify(f"{clean(err.cause, limit=200)}\nfix: {clean(err.fix, limit=120)}", title=err.code,
                        severity="error", timeout=8)  # fmt: skip
            return None

    @work(group="action", exclusive=True, exit_on_error=False)
    async def cancel_with_children(self: FlowHost, job_id: str, name: str, state: str) -> None:
        if (below := await self.children_or_say(job_id)) is None:
            return
        live = [b for b in below if b.state in LIVE_STATES]
        if not live:
            self.notify("No job below it is live: nothing to cancel with it (c cancels the job alone).", timeout=5)
            return

        async def call(c: Confirmed) -> str:
            return result_text(await self.source.cancel(job_id, note=c.note, children=True))

        by_state = Counter(b.state.value for b in live)
        mine = state in {s.value for s in LIVE_STATES}
        body = Text.assemble(
            "Cancel " if mine else "Leave ",
            (state, "bold"),
            " job ",
            job_named(job_id, name),
            " and " if mine else " as it is, and cancel ",
            (f"the {len(live):,} live job{'s' if len(live) != 1 else ''} below it", "bold"),
            " (" + ", ".join(f"{n:,} {s}" for s, n in by_state.most_common()) + "): ",
            "the jobs its steps enqueued or waited for, and theirs. Each becomes cancelled and will not run",
            " (a running handler is signalled to stop)" if "running" in by_state or state == "running" else "",
            f"; the {len(below) - len(live):,} below it that have settled stay as they are." if len(below) > len(live)
            else ".",
        )  # fmt: skip
        count = len(live) + (1 if mine else 0)
        verb = f"Cancel {count:,} job{'s' if count != 1 else ''}"
        await self.confirm_then_run("Cancel with its children?", body, verb, call)

    @work(group="action", exclusive=True, exit_on_error=False)
    async def retry_with_children(self: FlowHost, job_id: str, name: str, *, timed_out: bool = False) -> None:
        if (below := await self.children_or_say(job_id)) is None:
            return
        dead = [b for b in below if b.state is JobState.DEAD]
        if not dead and not timed_out:
            self.notify("No job below it is dead: nothing to retry with it (x retries the job alone).", timeout=5)
            return

        async def call(c: Confirmed) -> str:
            return result_text(await self.source.retry(job_id, note=c.note, children=True))

        rest = Counter(b.state.value for b in below if b.state is not JobState.DEAD)
        body = Text.assemble(
            "Retry dead job ",
            job_named(job_id, name),
            *((
                " and ",
                (f"the {len(dead):,} dead job{'s' if len(dead) != 1 else ''} below it", "bold"),
                ", the deepest first, each ready now with a fresh attempt budget. A job whose wait names one of "
                "them runs again from that wait, so it looks at them afresh; its earlier steps replay.",
            ) if dead else (": it becomes ready now with a fresh attempt budget.",)),
            " Its wait for jobs timed out: it runs again from that wait, which looks at them afresh, its timeout"
            " counted anew." if timed_out else "",
            f" The {rest.total():,} below it that are not dead ("
            + ", ".join(f"{n:,} {s}" for s, n in rest.most_common())
            + ") stay as they are." if rest else "",
        )  # fmt: skip
        count = len(dead) + 1
        await self.confirm_then_run(
            "Retry with its children?", body, f"Retry {count:,} job{'s' if count != 1 else ''}", call
        )

    @work(group="action", exclusive=True, exit_on_error=False)
    async def retry_from_step_flow(self: FlowHost, job_id: str, steps: Sequence[str]) -> None:
        step = await ask(self, StepChooser(steps))
        if step is None:
            self.notify(LEFT_ALONE, timeout=3)
            return

        async def call(c: Confirmed) -> str:
            return result_text(await self.source.retry_from_step(job_id, step, note=c.note))

        later = list(steps)[list(steps).index(step) :]
        body = Text.assemble(
            "Re-run job ",
            (short_id(job_id), "bold"),
            " from step ",
            (clean(step, limit=40), "bold"),
            f": the stored results of {len(later)} step{'s' if len(later) != 1 else ''} (",
            clean(", ".join(later), limit=120),
            ") are discarded; earlier steps keep theirs.",
        )
        await self.confirm_then_run("Retry from a step?", body, f"Retry from {clean(step, limit=24)}", call)

    def send_event(self: FlowHost, event: str, payload: Any, tenant: str | None) -> None:
        async def call(c: Confirmed) -> str:
            sent = await self.source.send_event(event, payload, tenant=tenant)
            return f"Sent event {sent.name}" + (f"; it woke {sent.woken} job(s)." if sent.woken else ".")

        body = Text.assemble(
            "Send event ",
            (clean(event, limit=60), "bold"),
            " with payload ",
            (clean(json.dumps(payload, default=str), limit=200), "bold"),
            f" (tenant {clean(tenant, limit=30)})" if tenant else "",
            ": every job waiting for a match wakes.",
        )
        # The engine's send_event keeps no note (the event row records who sent it): none is offered.
        self.confirm_and_run("Send this event?", body, f"Send {clean(event, limit=24)}", call, note=False)

    def toggle_pause(self: FlowHost, queue: str, paused: bool, stats: QueueStats | None = None) -> None:
        """``stats``: the queue as the screen last read it; a resume's confirm says who paused it,
        when, why, and how many of its jobs are ready to be claimed."""

        async def call(c: Confirmed) -> str:
            p = await (self.source.resume(queue, note=c.note) if paused else self.source.pause(queue, note=c.note))
            if not p.changed:
                return f"Queue {queue} was already {'paused' if p.paused else 'running'}."
            return f"Queue {queue} {'paused' if p.paused else 'resumed'}."

        if paused:  # the pause row goes, its note with it; the audit log keeps the resume's note
            body = resume_text(queue, stats, self.source.now())
            self.confirm_and_run("Resume this queue?", body, f"Resume {clean(queue, limit=24)}", call)
        else:
            body = Text.assemble(
                "Pause queue ",
                (clean(queue, limit=40), "bold"),
                ": no worker claims its jobs until it is resumed (running jobs finish).",
            )
            self.confirm_and_run("Pause this queue?", body, f"Pause {clean(queue, limit=24)}", call)

    def discard_job(self: FlowHost, job_id: str, name: str, *, then_back: bool = False) -> None:
        """Discard one dead job; ``then_back``: the screen showing it goes back once it is gone."""

        async def call(c: Confirmed) -> str:
            said = result_text(await self.source.discard(job_id, note=c.note))
            if then_back:
                self.leave()
            return said

        body = Text.assemble(
            "Discard dead job ",
            job_named(job_id, name),
            f": it is deleted; {DISCARD_EFFECT}. It cannot be retried afterwards.",
        )
        self.confirm_and_run("Discard this job?", body, f"Discard job {short_id(job_id)}", call)

    def drain_worker(
        self: FlowHost, worker: str, facts: str, unserved: Sequence[str], stale: Sequence[WorkerView] = ()
    ) -> None:
        async def call(c: Confirmed) -> str:
            said = drain_text(await self.source.drain_worker(worker, note=c.note))
            return said or f"Worker {worker} had been asked to drain already: nothing changed."

        body = drain_body([f"{worker}  {facts}"], unserved, stale)
        self.confirm_and_run("Drain this worker?", body, f"Drain {clean(worker, limit=24)}", call)


def drain_body(workers: list[str], unserved: Sequence[str], stale: Sequence[WorkerView] = ()) -> Text:
    t = Text("Ask ")
    t.append(f"{len(workers)} worker{'s' if len(workers) != 1 else ''}", style="bold")
    t.append(" to drain:\n")
    for w in workers[:10]:
        t.append(f"  {clean(w, limit=70)}\n")
    if len(workers) > 10:
        t.append(f"  … and {len(workers) - 10} more\n", style="dim")
    t.append(drain_what(unserved, stale))
    return t


def drain_what(unserved: Sequence[str], stale: Sequence[WorkerView] = ()) -> Text:
    """What a drain does, and to the queues: ``unserved`` are those no other live worker serves;
    ``stale``, the chosen workers that have stopped beating (a drain reaches them only if they
    beat again)."""
    t = Text()
    if stale:
        named = ", ".join(f"{clean(w.id, limit=30)} (no heartbeat for {duration(w.heartbeat_age)})" for w in stale[:4])
        named += " …" if len(stale) > 4 else ""
        t.append(f"Stale: {named}. ", style=f"bold {palette.style('warn')}")
        t.append("A stale worker sees the request only if it beats again: until then the drain changes nothing.\n")
    t.append(
        "Each stops claiming at its next heartbeat; its running jobs finish within its grace (the rest are "
        "released for another worker), then it exits. "
    )
    if not unserved:
        t.append("Its queues keep running on the other workers.")
        return t
    named = ", ".join(clean(q, limit=30) for q in unserved[:6]) + (" …" if len(unserved) > 6 else "")
    t.append(f"No other live worker serves {named}: ", style=f"bold {palette.style('warn')}")
    t.append("their jobs wait until a worker for them starts.")
    return t


def unserved_after_drain(chosen: Sequence[WorkerView], workers: Sequence[WorkerView]) -> list[str]:
    """The queues of the ``chosen`` workers that no other worker would serve once they drain: one
    live (not stale), not stopping and not asked to drain already."""
    leaving = {w.id for w in chosen}
    left = {
        q
        for w in workers
        if w.id not in leaving and not w.stale and not w.stopping and not w.drain_requested_by
        for q in w.queues
    }
    return sorted({q for w in chosen for q in w.queues} - left)


def drain_text(r: DrainRequest) -> str | None:
    """What a drain request did; None when the worker had been asked already."""
    if not r.changed:
        return None
    return f"worker {r.worker}: asked to drain (it stops claiming at its next heartbeat)."
