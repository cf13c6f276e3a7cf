"""The fleet's actions: pause and resume a queue, send an event, ask a worker to drain. They act
on the whole fleet, so a tenant-scoped operator may send an event (held to its tenant) but not
pause a queue or drain a worker other tenants' work runs on (I25)."""

from __future__ import annotations

import difflib
from typing import Any

from engine.actions.base import OperatorBase
from engine.errors import X_INVALID_ARGUMENT, X_UNKNOWN_QUEUE, X_UNKNOWN_WORKER, JobsError
from engine.projections import DrainRequest, QueuePause
from engine.records import SentEvent
from engine.runtime.step_checks import check_event
from engine.text import MAX_NAME, check_text


def _did_you_mean(name: str, known: list[str]) -> list[str]:
    return difflib.get_close_matches(name, known, n=3, cutoff=0.6)


class FleetActions(OperatorBase):
    def _fleet(self, what: str) -> None:
        if self.tenant is not None:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"{what} acts on the whole fleet; this operator is scoped to tenant {self.tenant!r}, "
                "and only an operator with no tenant= may",
                fix="Operator(engine, actor=...)",
            )

    async def pause(self, queue: str, *, note: str | None = None, create: bool = False) -> QueuePause:
        """Pause a queue: durable (jobs.queue), visible in the queues view, and the claim skips
        it. Running jobs finish; nothing new starts. Pausing a paused queue is a no-op. A queue
        no job row, worker or pause names is refused with the names it may have meant, unless
        ``create`` (pausing a queue before its first job)."""
        self._writable("pause", note, create=create)
        self._fleet("pausing a queue")
        name = _queue_name(queue, "pause")
        await self._open()
        if not create:
            known = await self.driver.queue_names_known()
            if name not in known:
                close = _did_you_mean(name, list(known))
                hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
                raise JobsError(
                    X_UNKNOWN_QUEUE,
                    cause=f"no job, worker or pause names queue {name!r}{hint}",
                    fix=f"jobsctl pause {close[0]}" if close else f"jobsctl pause {name} --create",
                )
        return await self.driver.queue_pause(queue=name, paused=True, actor=self.actor, note=note, now=self.clock.now())

    async def resume(self, queue: str, *, note: str | None = None) -> QueuePause:
        """Resume a paused queue: its pause row goes, so a queue paused by mistake (a typo
        paused with --create) leaves nothing behind there; the audit log keeps the resume, its
        actor and its note. Resuming a queue not paused is a no-op, and adds no entry."""
        self._writable("resume", note)
        self._fleet("resuming a queue")
        name = _queue_name(queue, "resume")
        await self._open()
        return await self.driver.queue_pause(
            queue=name, paused=False, actor=self.actor, note=note, now=self.clock.now()
        )

    async def send_event(self, name: str, payload: Any = None, *, tenant: str | None = None) -> SentEvent:
        """Send a durable event: every suspended wait of that name (and tenant) whose match the
        payload contains wakes now; a wait reached later still finds it. The name, the payload
        (a JSON object) and the tenant are checked before anything is written."""
        self._writable("send event")
        name, body, tenant = check_event(name, payload, self._tenant(tenant))
        await self._open()
        return await self.driver.event_send(
            id=self.ids.new(), name=name, payload=body, tenant=tenant, actor=self.actor, now=self.clock.now()
        )

    async def drain_worker(self, worker_id: str, *, note: str | None = None) -> DrainRequest:
        """Ask a running worker to stop claiming and drain (I14: in-flight work finishes within
        its grace, the rest is released). The worker sees the request at its next heartbeat;
        the request (who, when, the note) stays on its row until it deregisters. Asking twice
        is a no-op (``changed`` False)."""
        self._writable("drain a worker", note)
        self._fleet("draining a worker")
        if not isinstance(worker_id, str) or not worker_id.strip():
            raise JobsError(X_INVALID_ARGUMENT, cause=f"worker id {worker_id!r} is empty", fix="jobsctl workers")
        check_text(worker_id, what="worker id", fix="jobsctl workers")
        wid = worker_id.strip()
        await self._open()
        now = self.clock.now()
        res = await self.driver.worker_drain_request(id=wid, actor=self.actor, note=note, now=now)
        if res is None:
            known = [w.id for w in await self.driver.worker_list(now=now)]
            close = _did_you_mean(wid, known)
            hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            raise JobsError(
                X_UNKNOWN_WORKER,
                cause=f"no registered worker has id {wid!r}{hint}",
                fix=f"jobsctl workers drain {close[0]}" if close else "jobsctl workers",
            )
        return res


def _queue_name(queue: Any, verb: str) -> str:
    if not isinstance(queue, str) or not queue.strip():
        raise JobsError(X_INVALID_ARGUMENT, cause=f"queue={queue!r} is empty", fix=f"jobsctl {verb} QUEUE")
    check_text(queue, what="queue", fix=f"jobsctl {verb} QUEUE")
    if len(queue.strip()) > MAX_NAME:  # no job can name it (engine/jobs.py, check_name)
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"queue {queue.strip()[:60]!r}... is {len(queue.strip()):,} characters; a queue's name has at most {MAX_NAME}",
            fix=f"jobsctl {verb} QUEUE",
        )
    return queue.strip()
