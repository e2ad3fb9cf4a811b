"""Operating a queue: pause and resume (cluster-wide, persisted), cancel, retry from
the dead-letter queue, promote, drain, and reading jobs and counts.

Every action goes through the two planes' facades; the board calls these methods and
never writes rows itself.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..backends.hot_types import Signal
from ..clock import now_ms
from ..durable import Page, RecordWrite
from ..errors import InvalidState, JobNotFound
from ..lifecycle import emit_now
from ..live import request_cancel
from ..namespaces import QUEUE, dlq_namespace, job_namespace
from ..planes import Planes
from .dependencies import on_parent_done
from .jobs import Job

if TYPE_CHECKING:
    from .gates import QueueHooks

logger = logging.getLogger(__name__)
_PENDING = ("waiting", "delayed", "waiting-dependencies", "blocked")


class QueueControl:
    """Control and inspection methods of :class:`oqronkit.queues.queue.Queue`."""

    name: str
    lifecycle: QueueHooks

    @property
    def namespace(self) -> str:
        return job_namespace(self.name)

    @property
    def dlq_namespace(self) -> str:
        return dlq_namespace(self.name)

    @property
    def engine(self) -> Planes:
        """The engine the queue is declared on: these methods need only its planes."""
        raise NotImplementedError  # Queue defines it

    # -- pause / resume ----------------------------------------------------------------

    def control_state(self) -> dict[str, Any]:
        """This queue's persisted control record (``queue`` namespace)."""
        record = self.engine.durable.get(QUEUE, self.name)
        return record.value if record else {"name": self.name, "paused": False}

    def is_paused(self) -> bool:
        return bool(self.control_state().get("paused"))

    def pause(self) -> None:
        """Stop every worker in the cluster from claiming this queue's jobs (running
        jobs finish); persisted, so it survives restarts."""
        self._set_paused(True)

    def resume(self) -> None:
        self._set_paused(False)

    def _set_paused(self, paused: bool) -> None:
        durable = self.engine.durable
        for _ in range(20):
            record = durable.get(QUEUE, self.name)
            current = record.value if record else None
            value = {**(current or {"name": self.name}), "paused": paused, "updatedAt": now_ms()}
            expect = {"updatedAt": current.get("updatedAt")} if current else None
            from ..backends.types import ABSENT

            if durable.compare_and_set(QUEUE, self.name, expect=expect or ABSENT, value=value):
                self.lifecycle.note_paused(paused)  # this process's adds see it at once
                logger.info("queue %s %s", self.name, "paused" if paused else "resumed",
                            extra={"action": "queue.pause" if paused else "queue.resume", "queue": self.name})
                return
        raise InvalidState(f"Could not update queue {self.name!r}'s control state (too much contention).")

    # -- reading -------------------------------------------------------------------------

    def get_job(self, job_id: str) -> Job | None:
        """The waiting/active job, or its dead letter, or None."""
        durable = self.engine.durable
        record = durable.get(self.namespace, job_id) or durable.get(self.dlq_namespace, job_id)
        return Job.from_value(record.value) if record else None

    def list_jobs(self, *, status: str | None = None, dead: bool = False, limit: int = 50,
                  cursor: str | None = None) -> tuple[list[Job], str | None]:
        """A page of jobs (``dead=True``: the dead-letter queue), oldest first."""
        page: Page = self.engine.durable.list(
            self.dlq_namespace if dead else self.namespace, status=status, limit=limit, cursor=cursor
        )
        return [Job.from_value(r.value) for r in page.records], page.next_cursor

    def counts(self) -> dict[str, int]:
        """Waiting, delayed and active from the hot plane; dead from the durable plane."""
        depths = self.engine.hot.depths(self.name, now_ms())
        return {
            "waiting": depths.ready, "delayed": depths.delayed, "active": depths.active,
            "dead": self.engine.durable.count(self.dlq_namespace),
        }

    # -- job actions -------------------------------------------------------------------

    def cancel(self, job_id: str, *, reason: str = "cancelled") -> bool:
        """Cancel a job. A pending job is moved to the dead-letter queue at once (marked
        cancelled; retry brings it back); an active one is asked to stop
        (``ctx.cancelled``) and is dead-lettered as cancelled when its handler returns.
        Returns False if the job already finished."""
        engine = self.engine
        record = engine.durable.get(self.namespace, job_id)
        if record is None:
            return False
        job = Job.from_value(record.value)
        removed = engine.hot.remove(self.name, [job_id]) if job.status != "active" else set()
        if job.status == "active" or (job_id not in removed and engine.hot.present(self.name, [job_id])):
            # Claimed: the worker's heartbeat sees the request and sets ctx.cancelled.
            request_cancel(engine.hot, job_id, reason)
            return True
        dead = Job.from_value({**record.value, "cancelRequested": True})
        dead.die(reason, now_ms())
        engine.durable.apply(puts=[RecordWrite(self.dlq_namespace, job_id, dead.to_value())],
                             deletes=[(self.namespace, job_id)])
        logger.info("job %s/%s cancelled", self.name, job_id, extra={"action": "queue.cancel", "queue": self.name})
        emit_now(self, "cancelled", dead, reason=reason)
        on_parent_done(engine.durable, engine.hot, dead, "dead")
        return True

    def retry(self, job_id: str) -> Job:
        """Bring a dead-lettered (or cancelled) job back with a fresh set of attempts;
        its error history is kept."""
        engine = self.engine
        record = engine.durable.get(self.dlq_namespace, job_id)
        if record is None:
            raise JobNotFound(f"No dead-lettered job {job_id!r} in queue {self.name!r}.")
        job = Job.from_value(record.value)
        now = now_ms()
        revive(job, now)
        engine.durable.apply(puts=[RecordWrite(self.namespace, job_id, job.to_value())],
                             deletes=[(self.dlq_namespace, job_id)])
        if job.status == "waiting":
            engine.hot.signal(self.name, [Signal(job.id, job.priority, None, job.lifo)], now)
        return job

    def retry_many(self, job_ids: list[str]) -> list[Job]:
        retried = []
        for job_id in job_ids:
            try:
                retried.append(self.retry(job_id))
            except JobNotFound:
                continue
        return retried

    def delete_dead(self, job_ids: list[str]) -> int:
        """Delete dead letters for good."""
        return self.engine.durable.delete_many(self.dlq_namespace, job_ids)

    def promote(self, job_id: str) -> bool:
        """Run a delayed job now. False if it is not delayed."""
        engine = self.engine
        record = engine.durable.get(self.namespace, job_id)
        if record is None or record.value.get("status") != "delayed":
            return False
        job = Job.from_value(record.value)
        job.status, job.run_at, job.updated_at = "waiting", None, now_ms()
        if not engine.durable.compare_and_set(self.namespace, job_id, expect={"status": "delayed"},
                                              value=job.to_value()):
            return False
        if not engine.hot.promote(self.name, job_id, now_ms()):
            engine.hot.signal(self.name, [Signal(job.id, job.priority, None, job.lifo)], now_ms())
        return True

    def drain(self, *, limit: int | None = None) -> int:
        """Delete every waiting and delayed job (active jobs finish), or at most ``limit``
        of them (an operator's bounded purge). Returns the count."""
        engine = self.engine
        removed = 0
        for status in _PENDING:
            while limit is None or removed < limit:
                size = 500 if limit is None else min(500, limit - removed)
                ids = [r.id for r in engine.durable.list(self.namespace, status=status, limit=size).records]
                if not ids:
                    break
                engine.hot.remove(self.name, ids)
                removed += engine.durable.delete_many(self.namespace, ids)
        return removed


def revive(job: Job, now: int) -> None:
    """Reset a dead-lettered job for a retry (a fresh set of attempts, its error history
    kept): waiting, or held back by its dependencies as when it was first added."""
    job.status, job.attempts, job.stalls, job.run_at = "waiting", 0, 0, None
    job.dead_reason = job.died_at = job.error_fingerprint = job.lease_token = job.worker_id = job.run_id = None
    job.cancel_requested = False
    job.updated_at = now
    job.status = "waiting-dependencies" if job.pending and not job.blocked_by else job.status
    if job.blocked_by:
        job.status = "blocked"
