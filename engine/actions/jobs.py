"""The id-addressed actions: retry a dead job, retry a job from a step, cancel, discard a dead
letter. Each checks the id (a full id or a unique short one), applies only to the state it names
(fenced in the driver's statement too) and is written to the job's history with who, when and
the incident note. A refusal is a coded error and changes nothing; a clear no-op (cancelling a
finished job) answers ``changed=False`` with the reason."""

from __future__ import annotations

from dataclasses import replace

from engine.actions.base import OperatorBase
from engine.actions.children import descendants, restart_step
from engine.errors import X_INVALID_ARGUMENT, X_INVALID_STATE, X_KEY_HELD, X_NOT_FOUND, X_UNKNOWN_STEP, JobsError
from engine.introspect.base import load_job, not_found
from engine.projections import DISCARDED, ActionResult, JobSummary
from engine.records import StepRetry
from engine.text import check_text
from engine.types import LIVE_STATES, JobRow, JobState

# What a job still to run is doing, said when a retry (of a dead job) is asked of it: nothing needs
# retrying, and `jobsctl why` says what it waits for.
_STILL_TO_RUN = {
    JobState.READY: "it is already waiting to run",
    JobState.DELAYED: "it is already due to run later",
    JobState.PARKED: "a limit shed it and it runs again once the limit allows",
    JobState.SUSPENDED: "it waits (a sleep, an event or other jobs) and goes on by itself",
    JobState.RUNNING: "it is running now",
}


def not_dead(row: JobRow) -> JobsError:
    """A retry of a job that is not dead: one still to run is said to be, with `jobsctl why` to see
    what it waits for; a completed or cancelled one points at its detail."""
    doing = _STILL_TO_RUN.get(row.state)
    if doing is None:
        cause, fix = f"job {row.id} is {row.state.value}", f"jobsctl show {row.id}"
    else:
        cause, fix = f"job {row.id} is {row.state.value}: {doing}", f"jobsctl why {row.id}"
    return JobsError(X_INVALID_STATE, cause=f"{cause}; only a dead job can be retried", fix=fix)


def key_held(job_id: str, holder: str) -> JobsError:
    """A single-job retry that would run the work twice: another live job holds the key (I2). That
    job is the one doing the work, so the next step is to follow it; cancelling it to run this one
    instead is named in the cause, as a choice, not as the fix."""
    return JobsError(
        X_KEY_HELD,
        cause=f"job {holder} is live with the same idempotency key as {job_id}, so it does that work and retrying "
        f"would run it twice (to run {job_id} instead, cancel {holder} first)",
        fix=f"jobsctl why {holder}",
    )


def checked_step_retry(res: StepRetry, *, tenant: str | None) -> StepRetry:
    """The driver's answer to a retry from a step, or the clear error of a refusal (nothing changed)."""
    jid, step = res.job_id, res.step
    if res.outcome == "retried":
        return res
    if res.outcome == "not-found":
        raise not_found(jid, tenant)
    if res.outcome == "invalid-state":
        state = res.state.value if res.state is not None else "?"
        doing = _STILL_TO_RUN.get(res.state) if res.state is not None else None
        raise JobsError(
            X_INVALID_STATE,
            cause=f"job {jid} is {state}{f': {doing}' if doing else ''}; only a dead or completed job is retried "
            "from a step",
            fix=f"jobsctl why {jid}" if doing else f"jobsctl show {jid}",  # as a retry of it says
        )
    if res.outcome == "unknown-step":
        known = ", ".join(repr(n) for n in res.known_steps) or "none recorded"
        fix = f"jobsctl retry {jid} --from-step {res.known_steps[0]}" if res.known_steps else f"jobsctl show {jid}"
        raise JobsError(X_UNKNOWN_STEP, cause=f"job {jid} has no step {step!r}; its steps: {known}", fix=fix)
    raise key_held(jid, str(res.holder_id))


def _with_below(res: ActionResult, also: tuple[ActionResult, ...], done: str) -> ActionResult:
    """A job's answer with those of the jobs below it an action with children reached: changed
    if any of them changed, and how many did said after its own reason."""
    n = sum(a.changed for a in also)
    said = f"{n:,} job{'s' if n != 1 else ''} below it {done}"
    return replace(res, changed=res.changed or n > 0, reason="; ".join(filter(None, [res.reason, said])), also=also)


def _refused(row: JobRow, err: JobsError) -> ActionResult:
    """A job a retry with children could not retry, as its answer (nothing changed for it)."""
    return ActionResult("retry", row.id, False, row.state, row.state, reason=f"{err.cause} (fix: {err.fix})")


class JobActions(OperatorBase):
    async def retry(
        self, job_id: str, *, tenant: str | None = None, note: str | None = None, children: bool = False
    ) -> ActionResult:
        """Retry a dead job from scratch (attempts reset). Not dead: X_INVALID_STATE. Another
        live job holding its idempotency key: X_KEY_HELD, naming that job. With ``children``,
        every dead job below it first, deepest first, each audited with this note and the job it
        was retried with (their answers are the result's ``also``); a job whose stored wait for
        jobs answered them otherwise than they now stand (those just retried among them) runs
        again from that wait (``restart_step``), so it looks at them afresh. Jobs below that are
        not dead stay as they are; a second call finishes one that was interrupted."""
        self._writable("retry", note, children=children)
        tenant = self._tenant(tenant)
        row = await load_job(self, job_id, tenant, budget_ms=self.budget_ms)
        if row.state is not JobState.DEAD:
            raise not_dead(row)
        if not children:
            return await self._retry_dead(row.id, tenant, note)
        # The deepest first: a fan-in is ready again only once the jobs it looks at are.
        below = await self._below(row, tenant, "retry")
        now = {r.id: r.state.value for r in below}  # as they stand: what a stored wait is held to
        said = f"{note} (with job {row.id})" if note else f"with job {row.id}"
        also: tuple[ActionResult, ...] = ()
        for r in reversed([r for r in below if r.state is JobState.DEAD]):
            try:
                res = await self._retry_with(r, now, tenant, said)
            except JobsError as err:  # retried, settled or pruned meanwhile, or its key held: said, and on
                res = _refused(r, err)
            also += (res,)
            if res.changed:
                now[r.id] = JobState.READY.value
        try:
            res = await self._retry_with(row, now, tenant, note)
        except JobsError as err:  # the jobs below are retried: say what became of it rather than raise
            res = _refused(row, err)
        return _with_below(res, also, "retried")

    async def _retry_with(self, row: JobRow, now: dict[str, str], tenant: str | None, note: str | None) -> ActionResult:
        """A dead job retried as part of a retry with children: from its first wait whose stored
        answer the jobs below no longer match (``restart_step``), else from scratch."""
        step = restart_step(await self.driver.step_load(job_id=row.id), now)
        if step is None:
            return await self._retry_dead(row.id, tenant, note)
        return await self._retry_from(row, step, tenant, note)

    async def _retry_dead(self, job_id: str, tenant: str | None, note: str | None) -> ActionResult:
        res = await self.driver.job_retry_dead(
            job_id=job_id, tenant=tenant, now=self.clock.now(), actor=self.actor, note=note
        )
        if res is None:
            raise not_found(job_id, tenant)
        if res.duplicate_of is not None:
            raise key_held(job_id, res.duplicate_of)
        if not res.changed:
            raise JobsError(
                X_INVALID_STATE,
                cause=f"job {job_id} became {res.previous.value} meanwhile; only a dead job can be retried",
                fix=f"jobsctl show {job_id}",
            )
        return res

    async def retry_from_step(
        self, job_id: str, step: str, *, tenant: str | None = None, note: str | None = None
    ) -> ActionResult:
        """Run a dead or completed job again from ``step``: that step's stored result and every
        later one are discarded, earlier ones replay. Refused (X_INVALID_STATE, X_UNKNOWN_STEP,
        X_KEY_HELD, X_NOT_FOUND) with nothing changed."""
        self._writable("retry from a step", note)
        if not isinstance(step, str) or not step.strip():
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"step={step!r} must be a non-empty string",
                fix=f"jobsctl retry {job_id} --from-step STEP",
            )
        check_text(step, what="step", fix=f"jobsctl retry {job_id} --from-step STEP")
        tenant = self._tenant(tenant)
        row = await load_job(self, job_id, tenant, budget_ms=self.budget_ms)
        return await self._retry_from(row, step, tenant, note)

    async def _retry_from(self, row: JobRow, step: str, tenant: str | None, note: str | None) -> ActionResult:
        r = checked_step_retry(
            await self.driver.job_retry_from_step(
                job_id=row.id, step_name=step, tenant=tenant, now=self.clock.now(), actor=self.actor, note=note
            ),
            tenant=tenant,
        )
        return ActionResult(
            "retry_from_step",
            row.id,
            True,
            r.state or row.state,
            JobState.READY,
            reason=f"discarded steps: {', '.join(r.discarded) or 'none'}",
            discarded=r.discarded,
        )

    async def cancel(
        self, job_id: str, *, tenant: str | None = None, note: str | None = None, children: bool = False
    ) -> ActionResult:
        """Cancel a live job (ready, delayed, suspended, parked or running: its worker sees the
        cancel at its next lease renewal). An already finished job is a clear no-op. With
        ``children``, then every live job below it (``children()``), each audited with this note
        and the job it was cancelled with; their answers are the result's ``also``."""
        self._writable("cancel", note, children=children)
        tenant = self._tenant(tenant)
        row = await load_job(self, job_id, tenant, budget_ms=self.budget_ms)
        if children:
            await self._below(row, tenant)  # too many below it: refused before anything changes
        res = await self._cancel_one(row.id, tenant, note)
        if not children:
            return res
        # Read again after the job's own cancel: a run of it still fanning out can add no job now
        # (its step's write is fenced on a claim the cancel ended).
        said = f"{note} (with job {row.id})" if note else f"with job {row.id}"
        also: tuple[ActionResult, ...] = ()
        for r in await self._below(row, tenant):
            if r.state in LIVE_STATES:
                try:
                    also += (await self._cancel_one(r.id, tenant, said),)
                except JobsError as err:  # settled and pruned since the walk read it: nothing to cancel
                    if err.code != X_NOT_FOUND:
                        raise
        return _with_below(res, also, "cancelled")

    async def children(self, job_id: str, *, tenant: str | None = None) -> list[JobSummary]:
        """The jobs below ``job_id`` as they stand now: those its steps enqueued or waited for, and
        theirs in turn (engine/actions/children.py), breadth first; at most MAX_CHILDREN."""
        tenant = self._tenant(tenant)
        row = await load_job(self, job_id, tenant, budget_ms=self.budget_ms)
        return [JobSummary.of(r) for r in await self._below(row, tenant)]

    async def _below(self, row: JobRow, tenant: str | None, action: str = "cancel") -> list[JobRow]:
        found = await descendants(self.driver, row, action=action)
        return [r for r in found if tenant is None or r.tenant == tenant]  # I25

    async def _cancel_one(self, job_id: str, tenant: str | None, note: str | None) -> ActionResult:
        res = await self.driver.job_cancel(
            job_id=job_id, tenant=tenant, now=self.clock.now(), actor=self.actor, note=note
        )
        if res is None:
            raise not_found(job_id, tenant)
        if not res.cancelled:
            return ActionResult(
                "cancel",
                job_id,
                False,
                res.previous,
                res.previous,
                reason=f"the job is already {res.previous.value}: nothing to cancel",
            )
        return ActionResult(
            "cancel",
            job_id,
            True,
            res.previous,
            JobState.CANCELLED,
            reason="its worker stops it at the next lease renewal" if res.was_running else None,
        )

    async def discard(self, job_id: str, *, tenant: str | None = None, note: str | None = None) -> ActionResult:
        """Discard a dead letter: its row, attempts and steps are deleted, and a ``discarded``
        entry (who, when, the note, what the job was) stays in its history. Only a dead job:
        anything else is X_INVALID_STATE."""
        self._writable("discard", note)
        tenant = self._tenant(tenant)
        row = await load_job(self, job_id, tenant, budget_ms=self.budget_ms)
        if row.state is not JobState.DEAD:
            raise JobsError(
                X_INVALID_STATE,
                cause=f"job {row.id} is {row.state.value}; only a dead job can be discarded",
                fix=f"jobsctl cancel {row.id}" if row.state in LIVE_STATES else f"jobsctl show {row.id}",
            )
        res = await self.driver.job_discard(
            job_id=row.id, tenant=tenant, now=self.clock.now(), actor=self.actor, note=note
        )
        if res is None:
            raise not_found(row.id, tenant)
        if not res.changed:
            raise JobsError(
                X_INVALID_STATE,
                cause=f"job {row.id} became {res.previous.value} meanwhile; only a dead job can be discarded",
                fix=f"jobsctl show {row.id}",
            )
        return replace(res, reason=DISCARDED)
