"""The flows that act on many jobs behind one confirmation: a bulk action over everything a filter
(or several marked dead-letter groups) matches, after its dry run; and an action on the rows the
operator marked (space), each applied through the engine's one-job action, so each is audited on
its own job and refused by the engine on its own terms."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual import work

from console import palette
from console.actions import DISCARD_EFFECT
from console.format import clean, short_id
from console.messages import ActionFailed, ActionSucceeded
from console.screens.confirm import LEFT_ALONE, Confirmed, ConfirmScreen, ResultScreen
from console.screens.modal import ask
from console.screens.progress import ProgressScreen
from engine.durations import duration
from engine.errors import JobsError
from engine.introspect.filters import describe_filter
from engine.projections import BulkGroup, BulkPlan, BulkResult, JobFilter
from engine.types import JobState

if TYPE_CHECKING:
    from console.screens.hosts import FlowHost
    from console.source import Source

BULK_PACE = 10.0  # jobs per second offered as the paced alternative to landing all at once
WITH_CHILDREN = "with children: each with its dead jobs below (uncounted), wait rerun"
SHOWN = 10  # marked rows named in a confirmation; the rest are counted
VERBS = {"retry": ("Retry", "retried"), "cancel": ("Cancel", "cancelled"), "discard": ("Discard", "discarded")}
ACTING = {"retry": "Retrying", "cancel": "Cancelling", "discard": "Discarding"}
WHAT = {
    "retry": "would be retried",
    "cancel": "would be cancelled",
    "discard": f"would be discarded (each deleted; {DISCARD_EFFECT})",  # "each": its attempts, its history
}


def plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def scope_text(wheres: Sequence[JobFilter], scope: str | None = None) -> str:
    """What a bulk action's filters cover, in words: ``scope`` when the screen names it (the
    marked groups, every group shown), else the one filter."""
    if scope is not None:
        return scope
    return describe_filter(wheres[0]) if len(wheres) == 1 else f"the {len(wheres)} marked groups"


def plan_text(plans: Sequence[BulkPlan], scope: str | None = None) -> Text:
    """The dry run of one bulk action, or of the same action over several dead-letter groups."""
    action = plans[0].action
    matched = sum(p.matched for p in plans)
    t = Text()
    t.append(f"{matched:,}", style="bold")
    t.append(" job matches " if matched == 1 else " jobs match ")
    t.append(clean(scope_text([p.filter for p in plans], scope), limit=120), style="bold")
    t.append(".\n")
    if action == "retry":
        t.append(f"{sum(p.deduped for p in plans):,}", style="bold")
        t.append(" would dedupe away (a live duplicate holds the key); ")
    t.append(f"{sum(p.would_change for p in plans):,}", style="bold")
    t.append(f" {WHAT[action]}.\n\n")
    replays = sum(p.replays for p in plans)
    if replays:
        said = f"{plural(replays, 'fan-in')} among them waited for jobs that did not complete:"
        t.append(said, style=f"bold {palette.style('warn')}")
        t.append(" retried here, each replays that answer; retried with children, each runs its wait again.\n\n")
    groups: list[BulkGroup] = [g for p in plans for g in p.groups]
    # Each column as wide as what it shows, so the tenant stays on its line in a narrow dialog.
    stops = [clean(g.stop_reason or "—", limit=19) for g in groups[:8]]
    codes = [clean(g.error_code or "—", limit=22) for g in groups[:8]]
    sw, cw = max([len("stop reason"), *map(len, stops)]), max([len("error code"), *map(len, codes)])
    t.append(f"{'count':>7}  {'stop reason':<{sw}}  {'error code':<{cw}}  tenant\n", style="underline")
    for g, stop, code in zip(groups[:8], stops, codes):
        t.append(f"{g.count:>7,}  {stop:<{sw}}  {code:<{cw}}  {clean(g.tenant or '—', limit=20)}\n")
    if len(groups) > 8:
        t.append(f"… and {len(groups) - 8} more groups\n", style="dim")
    return t


async def apply_bulk(
    source: Source, action: str, plans: Sequence[BulkPlan], confirmed: Confirmed, shown: ProgressScreen, n: int
) -> str:
    """The bulk action over each plan's filter, bounded to what the plan counted (``n`` jobs in
    all), its totals shown after each batch."""
    done = VERBS[action][1]
    results: list[BulkResult] = []
    for plan in plans:
        before = (sum(r.changed for r in results), sum(r.skipped for r in results))

        def told(r: BulkResult, before: tuple[int, int] = before) -> None:
            changed, skipped = before[0] + r.changed, before[1] + r.skipped
            said = f"{changed:,} of {n:,} {done}, {skipped:,} skipped."
            if r.per_second and n > changed + skipped:  # the pace sets the rest's time
                said += f" About {duration(math.ceil((n - changed - skipped) / r.per_second))} left."
            shown.show(said)

        res = await source.bulk(
            plan.action,
            plan.filter,
            per_second=confirmed.per_second,
            note=confirmed.note,
            progress=told,
            stop=shown.stop,
            plan=plan,
        )
        results.append(res)
        if res.stopped:
            break
    changed, skipped = sum(r.changed for r in results), sum(r.skipped for r in results)
    said = f"{changed:,} {done}, {skipped:,} skipped (no longer eligible or deduped)."
    if any(r.stopped for r in results):
        return f"Stopped by you: {said} The rest are as they were."
    return said


async def retry_with_children(
    source: Source, plans: Sequence[BulkPlan], confirmed: Confirmed, shown: ProgressScreen, n: int
) -> str:
    """Each dead job a plan counted, retried with the dead jobs below it (the engine's retry with
    children, one job at a time): a job refused for itself is named and the rest go on."""
    retried = below = waits = 0
    left: list[str] = []
    for plan in plans:
        async for res in source.retry_all_with_children(
            plan.filter, per_second=confirmed.per_second, note=confirmed.note, stop=shown.stop, plan=plan
        ):
            if res.changed:
                retried += 1
                below += sum(a.changed for a in res.also)
                waits += sum(r.changed and r.action == "retry_from_step" for r in (res, *res.also))
            elif res.state is JobState.DEAD:  # refused for itself; one no longer dead came back with another
                left.append(f"{short_id(res.job_id)}: {clean(res.reason or 'refused', limit=100)}")
            shown.show(f"{retried:,} of {n:,} retried, with {plural(below, 'dead job')} below them.")
    summary = f"{retried:,} retried, with {plural(below, 'dead job')} below them"
    if waits:
        summary += f"; {waits:,} {'runs its wait' if waits == 1 else 'run their waits'} for jobs again, looking afresh"
    summary += "."
    if shown.stop.is_set():
        summary = f"Stopped by you: {summary} Any not reached are as they were."
    if left:
        summary += f" {len(left):,} left dead:\n" + "\n".join(left[:6])
    return summary


@dataclass(frozen=True)
class Item:
    """One marked row an action applies to: its key (a job or worker id), how the confirmation
    names it, and the engine call that applies the action to it (answering what changed, or
    None when it was a no-op)."""

    key: str
    label: str
    call: Callable[[str | None], Awaitable[str | None]]


class BulkFlows:
    """Mixed into data screens (through Flows); ``self`` is a data screen (hosts.FlowHost)."""

    @work(group="action", exclusive=True, exit_on_error=False)
    async def bulk_flow(
        self: FlowHost, action: str, wheres: JobFilter | Sequence[JobFilter], scope: str | None = None
    ) -> None:
        """``action`` over what ``wheres`` match (one filter, or a dead-letter group's each),
        behind the confirmation of its dry run; ``scope`` names what they cover when one filter's
        words would not (the marked groups, every group shown)."""
        wheres = [wheres] if isinstance(wheres, JobFilter) else list(wheres)
        try:
            plans = [await self.source.plan(action, w) for w in wheres]  # type: ignore[arg-type]
        except Exception as exc:
            title, detail = self.source.describe_failure(exc)
            self.notify(detail, title=f"Dry run failed: {title}", severity="error", timeout=8)
            return
        if sum(p.matched for p in plans) == 0:
            self.notify(f"Nothing to {action}: no job matches {scope_text(wheres, scope)}.", timeout=5)
            return
        verb = VERBS[action][0]
        n = sum(p.would_change for p in plans)
        confirmed = await ask(
            self,
            ConfirmScreen(
                f"{verb} {plural(n, 'job')}?",
                plan_text(plans, scope),
                verb=f"{verb} {plural(n, 'job')}",
                pace=BULK_PACE if action == "retry" else None,
                children=WITH_CHILDREN if any(p.replays for p in plans) else None,
            ),
        )
        if confirmed is None:
            self.notify(LEFT_ALONE, timeout=3)
            return
        shown = ProgressScreen(
            f"{ACTING[action]} {plural(n, 'job')}"
            + (" with children" if confirmed.children else "")
            + (f", {confirmed.per_second:g} a second" if confirmed.per_second else "")
        )
        self.app.push_screen(shown)
        try:
            if confirmed.children:
                summary = await retry_with_children(self.source, plans, confirmed, shown, n)
            else:
                summary = await apply_bulk(self.source, action, plans, confirmed, shown, n)
        except JobsError as err:
            self.post_message(ActionFailed(f"{err.code}: {err.cause}", err.fix))
            title, summary, failed = f"{verb} refused", f"{err.code}: {err.cause}\nfix: {err.fix}", True
        except Exception as exc:
            self.post_message(ActionFailed(f"{type(exc).__name__}: {exc}"))
            title, failed = f"{verb} failed part-way", True
            summary = clean(f"{type(exc).__name__}: {exc}", limit=300)
            summary += "\nSome jobs may have changed: the view below is re-read."
        else:
            title, failed = f"{verb}: {'stopped' if shown.stop.is_set() else 'done'}", False
            if confirmed.per_second:
                summary += f" Paced at {confirmed.per_second:g}/s."
            if confirmed.note:
                summary += f"\nNote in the audit trail: {clean(confirmed.note, limit=200)}"
            self.post_message(ActionSucceeded(f"{verb} {clean(scope_text(wheres, scope), limit=80)}: {summary}"))
        finally:
            shown.close()
        await ask(self, ResultScreen(title, summary, failed=failed))
        self.clear_marks()
        self.reload()

    @work(group="action", exclusive=True, exit_on_error=False)
    async def marked_flow(
        self: FlowHost, verb: str, noun: str, items: Sequence[Item], left: Sequence[str], what: str | Text
    ) -> None:
        """One confirmation for the marked rows ``items`` (``left``: the marked rows the action
        does not apply to, named so), then the action on each. ``what`` says what the action
        does, after the list."""
        n = len(items)
        body = Text()
        body.append(f"{verb} {plural(n, noun)}", style="bold")
        body.append(f" of the {n + len(left)} marked" if left else " (marked)")
        body.append(":\n")
        for it in items[:SHOWN]:
            body.append(f"  {clean(it.label, limit=70)}\n")
        if n > SHOWN:
            body.append(f"  … and {n - SHOWN} more\n", style="dim")
        for why in left[:4]:
            body.append(f"  left alone: {clean(why, limit=70)}\n", style="dim")
        if len(left) > 4:
            body.append(f"  … and {len(left) - 4} more left alone\n", style="dim")
        body.append(what)
        confirmed = await ask(self, ConfirmScreen(f"{verb} {plural(n, noun)}?", body, verb=f"{verb} {plural(n, noun)}"))
        if confirmed is None:
            self.notify(LEFT_ALONE, timeout=3)
            return
        changed: list[str] = []
        unchanged: list[str] = []
        refused: list[str] = []
        shown = ProgressScreen(f"{verb} {plural(n, noun)}")
        self.app.push_screen(shown)
        try:
            for i, it in enumerate(items):
                if shown.stop.is_set():
                    break
                shown.show(f"{i:,} of {plural(n, noun)} done.")
                try:
                    said = await it.call(confirmed.note)
                except JobsError as err:
                    refused.append(f"{short_id(it.key)}: {err.code}: {clean(err.cause, limit=120)}")
                except Exception as exc:  # a lost connection part-way: the rest are not tried
                    refused.append(f"{short_id(it.key)}: {type(exc).__name__}: {clean(str(exc), limit=120)}")
                    break
                else:
                    (changed if said is not None else unchanged).append(said or short_id(it.key))
        finally:
            shown.close()
        summary = f"{len(changed)} of {plural(n, noun)}: done."
        if shown.stop.is_set():
            summary = f"Stopped by you: {summary} The rest are as they were."
        if unchanged:
            summary += f" {len(unchanged)} no change (already so): {', '.join(unchanged[:6])}."
        if refused:
            summary += f" {len(refused)} refused or failed:\n" + "\n".join(refused[:6])
        if confirmed.note:
            summary += f"\nNote in the audit trail: {clean(confirmed.note, limit=200)}"
        self.post_message((ActionFailed if refused else ActionSucceeded)(f"{verb} {plural(n, noun)}: {summary}"))
        await ask(self, ResultScreen(f"{verb}: done", summary, failed=bool(refused)))
        self.clear_marks()
        self.reload()
