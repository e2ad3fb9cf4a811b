"""Settling every outcome but a completion: a retry (the job's next state stored under
our lease token, then its lease released with the retry's signal), a return (a job
held or interrupted at the stop, its attempt uncounted), a dead letter or a
cancellation (lease acked, run closed, dead letter written with the job's deletion),
and a lost lease (the attempt's run only).

An outage holds an outcome where it stands (:class:`Settling`), its lease renewed by
the heartbeat, and a retry on every flush goes on from there without redoing a step.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ..backends.hot_types import Lease, Signal
from ..clock import now_ms
from ..durable import RecordWrite
from ..errors import BackendUnavailable, OqronError
from ..live import forget_cancels
from ..namespaces import dlq_namespace, job_namespace
from ..queues.backoff import Backoff
from ..queues.dependencies import on_parent_done
from ..queues.gates import skip_reason
from ..queues.jobs import Job, shed_error_detail
from ..queues.shedding import write_shedding
from .events import fire_buried, fire_retried
from .inflight import Inflight, Outcome
from .run_writer import RunWriter
from .state import WorkerState

logger = logging.getLogger(__name__)
RUN_STATUS = {"completed": "completed", "failed": "failed", "discarded": "failed", "timeout": "failed",
              "cancelled": "cancelled", "interrupted": "cancelled", "lost": "failed", "postponed": "held",
              "skipped": "cancelled"}
T = TypeVar("T")


@dataclass(eq=False)
class Settling:
    """An outcome part-way through settling."""

    outcome: Outcome
    plan: tuple[bool, Signal | None, str] | None = None  # (final, signal, reason): decided once
    token: Any = None  # the lease token the guarded write expects
    run: RecordWrite | None = None
    closed: bool = False  # the first step landed: lease acked (final), or run closed and token taken
    stored: bool | None = None  # the guarded write's answer, once it came


class Failures:
    """``lease_lock`` is held while leases are marked released (see Completions)."""

    def __init__(self, state: WorkerState, writer: RunWriter, *, lease_lock: threading.Lock) -> None:
        self.state = state
        self.writer = writer
        self.lease_lock = lease_lock
        self._lock = threading.Lock()
        # Outcomes whose settling met an outage, in order: held, their leases renewed by
        # the heartbeat (add_held_leases), and retried on every flush.
        self._held: list[Settling] = []

    def held_back(self) -> bool:
        return bool(self._held)

    def unrecorded_ids(self) -> set[str]:
        with self._lock:
            return {h.outcome.inflight.job.id for h in self._held}

    def settle(self, outcome: Outcome) -> None:
        """Settle, or hold it (behind any outcome held already: they settle in order)."""
        settling = Settling(outcome)
        if self._held or not self._advance(settling):
            job = outcome.inflight.job
            logger.error("could not settle %s/%s (%s) for an outage; held for retry", job.queue, job.id,
                         outcome.kind, extra={"action": "finisher.settle_held"})
            with self._lock:
                self._held.append(settling)

    def retry_held(self) -> None:
        """Retry the outcomes held by an outage, in order, until one meets it again."""
        with self._lock:
            held = list(self._held)
        for settling in held:
            if not self._advance(settling):
                return
            with self._lock:
                self._held.remove(settling)

    def known_tokens(self, queue: str) -> set[int]:
        """The lease tokens of ``queue``'s held outcomes, released or not (a release in
        flight is still known)."""
        with self._lock:
            return {h.outcome.inflight.lease.token for h in self._held if h.outcome.inflight.job.queue == queue}

    def add_held_leases(self, grouped: dict[str, tuple[int, list[Lease]]]) -> None:
        """Add, per queue, the leases of held outcomes still ours to renew."""
        with self._lock:
            for held in self._held:
                inflight = held.outcome.inflight
                if not inflight.lease_released and not inflight.lease_lost:
                    grouped.setdefault(inflight.job.queue, (inflight.queue.lease_ms, []))[1].append(inflight.lease)

    def renewed(self, queue: str, leases: list[Lease], lost: list[Lease]) -> None:
        with self._lock:
            held = {h.outcome.inflight.job.id: h.outcome.inflight for h in self._held
                    if h.outcome.inflight.job.queue == queue}
        for lease in leases:
            if lease.job_id in held:
                held[lease.job_id].lease = lease
        for lease in lost:  # taken over: the guarded write or the ack finds out
            if lease.job_id in held:
                held[lease.job_id].lease_lost = True

    def _advance(self, settling: Settling) -> bool:
        """Settle as far as the planes allow: False when an outage holds it. Any other
        failure drops it (logged): the lease lapses and the rescuer retries the job."""
        outcome = settling.outcome
        try:
            return self._settle(settling)
        except BackendUnavailable:
            return False
        except Exception as exc:
            logger.error("could not settle %s/%s (%s): %s", outcome.inflight.job.queue,
                         outcome.inflight.job.id, outcome.kind, exc,
                         exc_info=None if isinstance(exc, OqronError) else exc, extra={"action": "finisher.error"})
            return True

    def _settle(self, settling: Settling) -> bool:
        """One step after another; False (or BackendUnavailable) when an outage holds it."""
        outcome = settling.outcome
        inflight, job = outcome.inflight, outcome.inflight.job
        if outcome.kind == "interrupted" and inflight.run is None:
            # Held (or waiting at a start gate), never started: its durable row was never
            # touched (still waiting, the attempt uncounted), so only the lease goes back.
            self._releasing(inflight, lambda: self.state.hot.release(
                job.queue, inflight.lease, Signal(job.id, job.priority, None, job.lifo), now_ms()))
            self.state.count("returned")
            return True
        if self.writer.has_pending_jobs() and not self.writer.write([], [], all_jobs=True):
            return False  # the active state is not stored yet: held, its lease renewed
        if outcome.kind == "lost":  # someone else holds the job now: record the attempt only
            run = self.writer.close(outcome, "failed", "lease lost; the job is returned by the rescuer")
            if run:
                self.writer.write([run], [])
            return True
        if settling.plan is None:  # once: a retry after an outage must not count the error again
            settling.plan = plan(outcome, now_ms())
        final, signal, reason = settling.plan
        if not final:
            assert signal is not None
            return self._give_back(settling, signal, reason)
        return self._bury(settling, reason)

    def _bury(self, settling: Settling, reason: str) -> bool:
        """Ack the lease, close the run, write the dead letter (if the queue keeps them)
        with the job's deletion."""
        outcome = settling.outcome
        inflight, job = outcome.inflight, outcome.inflight.job
        state, status = self.state, RUN_STATUS[outcome.kind]
        if not settling.closed:
            if not self._releasing(inflight, lambda: state.hot.ack(job.queue, [inflight.lease])):
                self.writer.write([r for r in [self.writer.close(outcome, status, reason)] if r], [])
                return True
            settling.closed = True
        run = self.writer.close(outcome, status, reason)
        puts = [run] if run else []
        if (inflight.queue.dead_letter or outcome.kind == "cancelled") and outcome.kind != "skipped":
            job.die(reason, now_ms())
            puts.append(RecordWrite(dlq_namespace(job.queue), job.id, job.to_value()))
        if outcome.kind == "cancelled":
            try:
                forget_cancels(state.hot, [job.id])
            except OqronError as exc:  # after the ack: a retry must not redo it; the request only lingers
                logger.warning("could not forget the cancel request of %s/%s: %s", job.queue, job.id, exc,
                               extra={"action": "finisher.after"})

        def buried() -> None:  # now, or once a write held by an outage lands
            state.count("dead")
            fire_buried(state, outcome, reason)
            on_parent_done(state.durable, state.hot, job, "dead")

        self.writer.write(puts, [(job_namespace(job.queue), job.id)], then=buried)
        return True

    def _give_back(self, settling: Settling, signal: Signal, reason: str) -> bool:
        """Store the job's next state, guarded by our lease token, then release it; each
        step once, an outage holding the rest."""
        outcome = settling.outcome
        inflight, job = outcome.inflight, outcome.inflight.job
        if not settling.closed:
            settling.token = job.lease_token
            job.lease_token, job.worker_id, job.updated_at = None, None, now_ms()
            # A postponed attempt did not happen: its run is kept only if already written.
            keep_run = outcome.kind != "postponed" or inflight.run_stored
            settling.run = self.writer.close(outcome, RUN_STATUS[outcome.kind], reason) if keep_run else None
            settling.closed = True
        if settling.stored is None:
            settling.stored = self._store_guarded(job, settling.token)
        if settling.stored and not inflight.lease_released:
            self._releasing(inflight, lambda: self.state.hot.release(job.queue, inflight.lease, signal, now_ms()))
        if settling.run:
            self.writer.write([settling.run], [])
        self.state.count({"interrupted": "interrupted", "postponed": "postponed"}.get(outcome.kind, "retried"))
        if outcome.kind not in ("interrupted", "postponed"):
            fire_retried(self.state, outcome, reason)
        return True

    def _store_guarded(self, job: Job, token: Any) -> bool:
        """Write the job's next state if our lease token is still its own; with less
        error detail if it is over the record size limit."""
        durable, namespace = self.state.durable, job_namespace(job.queue)
        return write_shedding(
            lambda value: durable.compare_and_set(namespace, job.id, expect={"leaseToken": token}, value=value),
            job.to_value(), shed_error_detail)

    def _releasing(self, inflight: Inflight, release: Callable[[], T]) -> T:
        """Run a release (ack) of the inflight's lease, no renewal racing it; an outage
        leaves the lease ours to renew while the outcome is held."""
        with self.lease_lock:  # before the release: a renewal after it would recreate the lease
            inflight.lease_released = True
        try:
            return release()
        except BackendUnavailable:
            inflight.lease_released = False
            raise


def plan(outcome: Outcome, now: int) -> tuple[bool, Signal | None, str]:
    """The job's next state (final, signal to give it back with, reason), set on it."""
    inflight, job = outcome.inflight, outcome.inflight.job
    if outcome.kind == "interrupted":
        job.status, job.attempts = "waiting", max(job.attempts - 1, 0)  # the attempt is not counted
        return False, Signal(job.id, job.priority, None, job.lifo), "worker shutting down; returned"
    if outcome.kind == "postponed":  # the attempt did not happen: not counted, no error kept
        job.attempts = max(job.attempts - 1, 0)
        job.status, job.run_at = "delayed", now + (outcome.delay_ms or 0)
        return False, Signal(job.id, job.priority, job.run_at, job.lifo), \
            f"postponed {outcome.delay_ms} ms, attempt not counted: {outcome.reason}"
    if outcome.kind == "skipped":  # its condition said no: the job ends, no error kept
        return True, None, skip_reason(outcome.reason or "")
    if outcome.error:
        job.record_error({**outcome.error, "attempt": job.attempts,
                          "runId": inflight.run["id"] if inflight.run else None})
    if outcome.kind in ("discarded", "cancelled") or job.attempts >= job.max_attempts:
        return True, None, {"cancelled": f"cancelled: {inflight.cancel_reason or 'by request'}",
                            "discarded": f"discarded: {outcome.error.get('message', '') if outcome.error else ''}"}.get(
            outcome.kind, f"{outcome.kind} on attempt {job.attempts} of {job.max_attempts}")
    delay = outcome.delay_ms if outcome.delay_ms is not None else Backoff.from_value(job.backoff).delay_ms(job.attempts)
    job.status, job.run_at = "delayed", now + delay
    return False, Signal(job.id, job.priority, job.run_at, job.lifo), f"{outcome.kind}; retry in {delay} ms"
