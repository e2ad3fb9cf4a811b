"""Settling outcomes on both planes, in batches, from one thread.

The finisher is also the only writer of run records, so a background flush of a
running run can never overwrite the final version: both happen here, in order.
"""

from __future__ import annotations

import logging
import queue as queue_module
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ..backends.hot_types import Lease, Signal
from ..backoff import Backoff
from ..clock import now_ms
from ..dependencies import on_parent_done
from ..durable import RecordWrite
from ..errors import BackendUnavailable, OqronError
from ..jobs import Job, shed_error_detail
from ..live import forget_cancels, forget_runs
from ..namespaces import RUNS, dlq_namespace, job_namespace
from ..runs import describe_error, finish_run
from ..shedding import write_shedding
from .inflight import Inflight, Outcome
from .refusals import apply_refusing, is_outage

if TYPE_CHECKING:
    from .process import WorkerProcess

logger = logging.getLogger(__name__)
RUN_STATUS = {"completed": "completed", "failed": "failed", "discarded": "failed", "timeout": "failed",
              "cancelled": "cancelled", "interrupted": "cancelled", "lost": "failed"}
BATCH = 500
FLUSH_EVERY = 0.5
ACTIVE_STATE_AFTER = 0.5  # seconds a job runs before its "active" state is written behind
RUN_WRITE_AFTER = 0.5  # seconds a run runs before it is written behind (before it ends)
T = TypeVar("T")


@dataclass(eq=False)
class Settling:
    """An outcome other than a completion, part-way through settling: an outage holds it
    where it stands, and a retry goes on from there without redoing a step."""

    outcome: Outcome
    plan: tuple[bool, Signal | None, str] | None = None  # (final, signal, reason): decided once
    token: Any = None  # the lease token the guarded write expects
    run: RecordWrite | None = None
    closed: bool = False  # the first step landed: lease acked (final), or run closed and token taken
    stored: bool | None = None  # the guarded write's answer, once it came


class Finisher:
    """Consumes outcomes; writes runs behind (batched) and settles jobs."""

    def __init__(self, process: WorkerProcess) -> None:
        self.process = process
        self.outcomes: queue_module.Queue[Outcome] = queue_module.Queue()
        self.running_runs: dict[str, Inflight] = {}
        self._dirty: set[str] = set()
        self._lock = threading.Lock()
        # Held by the heartbeat from reading the leases to renew until renewed, and here
        # while leases are marked released: a renewal landing after an ack re-creates it.
        self.lease_lock = threading.Lock()
        self._last_flush = time.monotonic()
        # Writes that failed while the durable plane was away; retried on every flush.
        self._pending_runs: list[RecordWrite] = []
        self._pending_deletes: list[tuple[str, str]] = []
        # What follows a held write once it lands (a dead job's hook, its dependents).
        self._pending_after: list[Callable[[], None]] = []
        # Jobs' "active" state (attempt, lease token) with when they started, written
        # behind once they have run for ACTIVE_STATE_AFTER: a fast job completes before
        # that, so its row goes from waiting straight to deleted, without an update in
        # between (the value is taken at write time, from this thread only). A worker
        # dying meanwhile loses nothing: the rescuer counts the attempt of a leased job
        # still waiting in the durable plane, and cancel asks the hot plane.
        self._pending_jobs: dict[tuple[str, str], tuple[Job, float]] = {}
        # Completed jobs whose deletion waits for the durable plane: their leases are
        # released (acked) only once it lands, and renewed by the heartbeat meanwhile,
        # so neither the rescuer nor the reconciler hands them out again.
        self._unacked: dict[tuple[str, str], tuple[Lease, int]] = {}
        # Completed jobs whose ownership check (extend) met a hot-plane outage: held with
        # their runs and retried on every flush; only the plane's answer can say "lost".
        self._unconfirmed: list[tuple[str, list[Outcome], list[RecordWrite | None]]] = []
        # Failed, retried or returned jobs whose settling met an outage: held, their leases
        # renewed by the heartbeat (unacked_leases), and retried on every flush, in order.
        self._held_others: list[Settling] = []
        self.max_buffered_runs = 50_000
        # Postgres mode: completed jobs settle in one transaction (_release_at_once).
        # Asked on first use: the planes open when the worker starts, not when it is built.
        self._one_transaction: bool | None = None
        # Set by the stop: until then (monotonic), held writes are retried before the loop ends.
        self.retry_until = 0.0

    # -- called from other threads ----------------------------------------------------

    def started(self, inflights: list[Inflight]) -> None:
        with self._lock:
            for inflight in inflights:
                run_id = inflight.run["id"]  # type: ignore[index]  # started attempts have runs
                self.running_runs[run_id] = inflight
                self._dirty.add(run_id)
                job = inflight.job
                self._pending_jobs[(job.namespace, job.id)] = (job, inflight.began)

    def submit(self, outcome: Outcome) -> None:
        self.outcomes.put(outcome)

    def unacked_leases(self) -> dict[str, tuple[int, list[Lease]]]:
        """Per queue: (lease ms, leases of settled jobs waiting for a plane: completed
        jobs' deletions, and outcomes held by an outage)."""
        with self._lock:
            grouped: dict[str, tuple[int, list[Lease]]] = {}
            for (queue, _), (lease, lease_ms) in self._unacked.items():
                grouped.setdefault(queue, (lease_ms, []))[1].append(lease)
            for held in self._held_others:
                inflight = held.outcome.inflight
                if not inflight.lease_released and not inflight.lease_lost:
                    grouped.setdefault(inflight.job.queue, (inflight.queue.lease_ms, []))[1].append(inflight.lease)
            return grouped

    def renewed(self, queue: str, leases: list[Lease], lost: list[Lease]) -> None:
        """The heartbeat renewed (or lost) unacked leases."""
        with self._lock:
            for lease in leases:
                key = (queue, lease.job_id)
                if key in self._unacked:
                    self._unacked[key] = (lease, self._unacked[key][1])
            for lease in lost:
                self._unacked.pop((queue, lease.job_id), None)
            held = {h.outcome.inflight.job.id: h.outcome.inflight for h in self._held_others
                    if h.outcome.inflight.job.queue == queue}
            for lease in leases:
                if lease.job_id in held:
                    held[lease.job_id].lease = lease
            for lease in lost:  # taken over: the guarded write or the ack finds out
                if lease.job_id in held:
                    held[lease.job_id].lease_lost = True

    # -- the finisher thread -------------------------------------------------------------

    def loop(self, stop: threading.Event) -> None:
        while True:
            batch = self._take_batch(timeout=0.1)
            if batch:
                self._settle(batch)
                self.process.settled_batch()
            if time.monotonic() - self._last_flush >= FLUSH_EVERY:
                self.flush_running()
            if stop.is_set() and self.outcomes.empty() and not self.process.has_inflight():
                self.flush_running()
                if not self._held_back() or time.monotonic() >= self.retry_until:
                    return
                stop.wait(FLUSH_EVERY)  # an outage holds writes: retry them until the drain deadline

    def unrecorded(self) -> int:
        """Jobs whose outcome waits in held writes (an outage): not recorded yet."""
        with self._lock:
            jobs = {job_id for _, job_id in self._unacked}
        jobs.update(job_id for _, job_id in self._pending_deletes)
        jobs.update(o.inflight.job.id for _, group, _ in self._unconfirmed for o in group)
        with self._lock:
            jobs.update(h.outcome.inflight.job.id for h in self._held_others)
        jobs.update(w.value.get("jobId") or w.id if w.namespace == RUNS else w.id for w in self._pending_runs)
        return len(jobs)

    def _take_batch(self, timeout: float) -> list[Outcome]:
        try:
            first = self.outcomes.get(timeout=timeout)
        except queue_module.Empty:
            return []
        batch = [first]
        while len(batch) < BATCH:
            try:
                batch.append(self.outcomes.get_nowait())
            except queue_module.Empty:
                break
        return batch

    def flush_running(self) -> None:
        """Write behind the runs still running (progress, logs) and any retried runs."""
        self._last_flush = time.monotonic()
        if self._unconfirmed:
            self._confirm_held()
        if self._held_others:
            self._retry_held_others()
        ripe = self._last_flush - RUN_WRITE_AFTER
        with self._lock:
            # Only runs busy for a while: most end sooner and are written once, as a
            # first-time insert; the younger ones wait for a later flush.
            self._dirty.intersection_update(self.running_runs)
            ids = [r for r in self._dirty if self.running_runs[r].began <= ripe]
            self._dirty.difference_update(ids)
            dirty = [self.running_runs[r] for r in ids]
        writes = list(self._pending_runs)
        if self.process.record_runs:
            for inflight in dirty:
                inflight.run_stored = True
                writes.append(RecordWrite(RUNS, inflight.run["id"], inflight.run_snapshot(), checked=True))
        if writes or self._pending_deletes or self._pending_jobs:
            self._write_runs(writes, [])

    def mark_dirty(self, run_id: str) -> None:
        with self._lock:
            self._dirty.add(run_id)

    def _write_runs(self, runs: list[RecordWrite], deletes: list[tuple[str, str]], *, all_jobs: bool = False,
                    then: Callable[[], None] | None = None) -> bool:
        """Write runs (and delete finished jobs) in one transaction, after any earlier
        writes still waiting, with the active state of jobs running for a while (of
        every started job with ``all_jobs``); on failure keep them all for the next flush."""
        pending_ids = {w.id for w in runs}
        doomed = list(dict.fromkeys(self._pending_deletes + deletes))
        started_before = time.monotonic() - ACTIVE_STATE_AFTER
        with self._lock:
            gone = set(doomed)
            pending: list[tuple[Job, float]] = []
            for key, (job, began) in list(self._pending_jobs.items()):
                if key in gone:
                    del self._pending_jobs[key]
                elif all_jobs or began <= started_before:
                    pending.append((job, began))
                    del self._pending_jobs[key]
        jobs = [RecordWrite(job.namespace, job.id, job.to_value()) for job, _ in pending]
        puts = jobs + [w for w in self._pending_runs if w.id not in pending_ids] + runs
        try:
            # What the plane refuses for its content is left out or shed (refusals.py):
            # only an outage holds the writes.
            apply_refusing(self.process.engine.durable, puts, doomed)
        except Exception as exc:
            # Held: runs and dead letters (a dead letter's job deletion is held with it,
            # so neither may go without the other); the jobs' running state is queued
            # again below. Only the oldest runs give way when the buffer is full.
            job_keys = {(w.namespace, w.id) for w in jobs}
            held = [w for w in puts if (w.namespace, w.id) not in job_keys]
            runs = [w for w in held if w.namespace == RUNS]
            if len(runs) > self.max_buffered_runs:
                dropped = {id(w) for w in runs[:len(runs) - self.max_buffered_runs]}
                logger.critical("run buffer full: dropping the %d oldest run records", len(dropped),
                                extra={"action": "runs.buffer_full"})
                held = [w for w in held if id(w) not in dropped]
            self._pending_runs = held
            self._pending_deletes = doomed
            if then is not None:
                self._pending_after.append(then)
            with self._lock:
                for job, began in pending:
                    self._pending_jobs.setdefault((job.namespace, job.id), (job, began))
            logger.error(
                "durable plane unavailable: %d run record(s) and %d job deletion(s) held for retry: %s",
                len(self._pending_runs), len(doomed), exc, exc_info=None if is_outage(exc) else exc,
                extra={"action": "runs.buffer"},
            )
            return False
        self._pending_runs, self._pending_deletes = [], []
        self._ack_unacked()
        after, self._pending_after = self._pending_after + ([then] if then is not None else []), []
        for step in after:
            try:
                step()
            except Exception as exc:  # the sweeper still resolves dependents; nothing is lost
                logger.warning("a step after a durable write failed: %s", exc, exc_info=not isinstance(exc, OqronError),
                               extra={"action": "finisher.after"})
        return True

    def _ack_unacked(self) -> None:
        """Release the leases of completed jobs now deleted from the durable plane."""
        with self.lease_lock, self._lock:
            if not self._unacked:
                return
            done, self._unacked = self._unacked, {}
        by_queue: dict[str, list[Lease]] = defaultdict(list)
        for (queue, _), (lease, _ms) in done.items():
            by_queue[queue].append(lease)
        for queue, leases in by_queue.items():
            try:
                self.process.engine.hot.ack(queue, leases)
            except OqronError as exc:  # the leases lapse; the rescuer finds the jobs gone
                logger.warning("could not release %d completed job(s) of %s: %s", len(leases), queue, exc,
                               extra={"action": "finisher.ack_failed"})

    def _settle(self, batch: list[Outcome]) -> None:
        """Settle a batch; no exception leaves it (the finisher thread must never die):
        an attempt whose settling fails for anything but an outage fails, with the
        reason, and the rest of the batch settles."""
        self._clear_overlay(batch)
        completed = [o for o in batch if o.kind == "completed"]
        others = [o for o in batch if o.kind != "completed"]
        if completed:
            others += self._settle_completed_isolating(completed)
        for outcome in others:
            settling = Settling(outcome)
            try:
                # Held before it is forgotten: its lease renewal passes from one to the other.
                if self._held_others or not self._advance(settling):
                    self._hold(settling)
            finally:
                self._done(outcome.inflight)

    def _hold(self, settling: Settling) -> None:
        job = settling.outcome.inflight.job
        logger.error("could not settle %s/%s (%s) for an outage; held for retry", job.queue, job.id,
                     settling.outcome.kind, extra={"action": "finisher.settle_held"})
        with self._lock:
            self._held_others.append(settling)

    def _retry_held_others(self) -> None:
        """Retry the outcomes held by an outage, in order, until one meets it again."""
        with self._lock:
            held = list(self._held_others)
        for settling in held:
            if not self._advance(settling):
                return
            with self._lock:
                self._held_others.remove(settling)

    def _advance(self, settling: Settling) -> bool:
        """Settle as far as the planes allow: False when an outage holds it. Any other
        failure drops it (logged): the lease lapses and the rescuer retries the job."""
        outcome = settling.outcome
        try:
            return self._settle_other(settling)
        except BackendUnavailable:
            return False
        except Exception as exc:
            logger.error("could not settle %s/%s (%s): %s", outcome.inflight.job.queue,
                         outcome.inflight.job.id, outcome.kind, exc,
                         exc_info=None if isinstance(exc, OqronError) else exc, extra={"action": "finisher.error"})
            return True

    def _releasing(self, inflight: Inflight, release: Callable[[], T]) -> T:
        """Run a release (ack) of the inflight's lease, no renewal racing it; an outage
        leaves the lease the finisher's to renew while the outcome is held."""
        with self.lease_lock:  # before the release: a renewal after it would recreate the lease
            inflight.lease_released = True
        try:
            return release()
        except BackendUnavailable:
            inflight.lease_released = False
            raise

    def _settle_completed_isolating(self, completed: list[Outcome]) -> list[Outcome]:
        """Settle completed outcomes; when that raises, each again on its own: the
        failures to settle instead, one per outcome that raises alone (with the reason)."""
        try:
            self._settle_completed(completed)
            return []
        except Exception as exc:
            if len(completed) == 1:
                logger.critical("could not settle the completed job %s/%s; failing its attempt",
                                completed[0].inflight.job.queue, completed[0].inflight.job.id, exc_info=exc,
                                extra={"action": "finisher.error"})
                return [Outcome(completed[0].inflight, "failed", error=describe_error(exc))]
            logger.error("could not settle %d completed job(s) together; one by one: %s", len(completed), exc,
                         extra={"action": "finisher.error"})
        return [failed for o in completed for failed in self._settle_completed_isolating([o])]

    def _clear_overlay(self, batch: list[Outcome]) -> None:
        """Drop finished runs from the live overlay (only those ever published)."""
        ids = [o.inflight.run["id"] for o in batch if o.inflight.overlay_published and o.inflight.run]
        if ids:
            try:
                forget_runs(self.process.engine.hot, ids)
            except OqronError as exc:  # they lapse by their TTL instead
                logger.warning("could not clear %d run(s) from the live overlay: %s", len(ids), exc,
                               extra={"action": "overlay.failed"})

    def _finish(self, outcome: Outcome, status: str, reason: str | None = None) -> RecordWrite | None:
        inflight = outcome.inflight
        if inflight.run is None:  # held, never started: no run to close
            return None
        with inflight.lock:
            finish_run(inflight.run, status, output=outcome.output, error=outcome.error, reason=reason,
                       limit=self.process.config.run_timeline_limit)
        return self._run_write(inflight, status)

    def _run_write(self, inflight: Inflight, status: str) -> RecordWrite | None:
        """The closed run as a write (a plain insert the first time), or None when runs
        are not recorded."""
        if not self.process.record_runs or inflight.run is None:
            return None
        ttl = inflight.queue.completed_run_ttl_ms if status == "completed" else None
        new = not inflight.run_stored
        inflight.run_stored = True  # any later write of it is an upsert
        # checked: the input is the decoded payload (the handler has a copy), the
        # output passed executor.classify's check, the rest the worker wrote.
        return RecordWrite(RUNS, inflight.run["id"], inflight.run_snapshot(),
                           now_ms() + ttl if ttl is not None else None, new=new, checked=True)

    def _settle_completed(self, outcomes: list[Outcome]) -> None:
        engine = self.process.engine
        by_queue: dict[str, list[Outcome]] = defaultdict(list)
        for o in outcomes:
            by_queue[o.inflight.job.queue].append(o)
        deleted: set[tuple[str, str]] = set()
        for queue, group in by_queue.items():
            # Closed as completed; a run whose lease turns out lost says so (_lost_lease).
            runs = [self._finish(o, "completed") for o in group]
            released = None
            if self._one_transaction is None:
                self._one_transaction = engine.settles_in_one_transaction
            if self._one_transaction and not self._held_back():
                released = self._release_at_once(queue, group, runs)
            if released is None:
                released = self._release_in_steps(queue, group, runs)
            deleted |= {(queue, job_id) for job_id in released}
        for o in outcomes:
            self._done(o.inflight)
        for o in outcomes:
            job = o.inflight.job
            if (job.queue, job.id) in deleted and job.dependents:
                try:
                    on_parent_done(engine.durable, engine.hot, job, "completed")
                except Exception as exc:  # the dependency sweep resolves them later
                    logger.warning("could not resolve the dependents of %s/%s: %s", job.queue, job.id, exc,
                                   exc_info=not isinstance(exc, OqronError), extra={"action": "finisher.after"})
            self.process.hook(o.inflight, "complete", o.output)

    def _held_back(self) -> bool:
        """Whether writes or leases wait on an earlier failure: they go first, in steps."""
        return bool(self._unacked or self._pending_runs or self._pending_deletes or self._pending_after
                    or self._unconfirmed or self._held_others)

    def _release_at_once(self, queue: str, group: list[Outcome], runs: list[RecordWrite | None]) -> set[str] | None:
        """Postgres mode: write the runs, release the leases and delete the jobs in one
        transaction; the ids released, or None (nothing written) to settle in steps."""
        with self.lease_lock:  # before the release: a renewal after it would recreate the lease
            for o in group:
                o.inflight.lease_released = True
        try:
            released = self.process.engine.durable.apply_and_release(
                puts=[run for run in runs if run is not None], namespace=job_namespace(queue), queue=queue,
                leases=[(o.inflight.lease.job_id, o.inflight.lease.token) for o in group])
        except Exception as exc:
            # An outage, or a record the plane refuses: the steps below hold or shed it.
            logger.warning("could not settle %d completed job(s) of %s in one transaction; in steps: %s",
                           len(group), queue, exc, extra={"action": "finisher.settle_in_steps"})
            for o in group:
                o.inflight.lease_released = False
            return None
        with self._lock:
            for o in group:
                if o.inflight.job.id in released:
                    self._pending_jobs.pop((o.inflight.job.namespace, o.inflight.job.id), None)
        self.process.count("completed", len(released))
        lost = [self._lost_lease(o) for o in group if o.inflight.job.id not in released]
        if lost:  # counted once their runs are recorded
            self._write_runs([run for run in lost if run is not None], [],
                             then=lambda: self.process.count("completed", len(lost)))
        return released

    def _release_in_steps(self, queue: str, group: list[Outcome], runs: list[RecordWrite | None]) -> set[str]:
        """Renew the leases (ownership first; it also gives the durable write time), write
        the runs and delete the owned jobs, then release their leases once the deletion
        has landed (_ack_unacked); the ids deleted. An outage holds the batch instead."""
        engine = self.process.engine
        lease_ms = group[0].inflight.queue.lease_ms
        try:
            renewed = engine.hot.extend(queue, [o.inflight.lease for o in group], lease_ms=lease_ms, now=now_ms())
        except BackendUnavailable as exc:
            # No answer is not "not yours": treated as lost, a completed job ran again.
            logger.error("could not confirm the leases of %d completed job(s) of %s; held for retry: %s",
                         len(group), queue, exc, extra={"action": "finisher.confirm_held"})
            self._unconfirmed.append((queue, group, runs))
            return set()
        except Exception as exc:
            logger.error("could not confirm the leases of %d completed job(s) of %s: %s", len(group), queue,
                         exc, exc_info=None if isinstance(exc, OqronError) else exc,
                         extra={"action": "finisher.ack_failed"})
            renewed = []
        return self._record_completed(queue, group, runs, renewed)

    def _confirm_held(self) -> None:
        """Retry the ownership check of completions held by a hot-plane outage, in order;
        the first that meets the outage again keeps itself and the rest held."""
        held, self._unconfirmed = self._unconfirmed, []
        for i, (queue, group, runs) in enumerate(held):
            lease_ms = group[0].inflight.queue.lease_ms
            try:
                renewed = self.process.engine.hot.extend(queue, [o.inflight.lease for o in group],
                                                         lease_ms=lease_ms, now=now_ms())
            except BackendUnavailable:
                self._unconfirmed = held[i:] + self._unconfirmed
                return
            self._record_completed(queue, group, runs, renewed)

    def _record_completed(self, queue: str, group: list[Outcome], runs: list[RecordWrite | None],
                          renewed: list[Lease]) -> set[str]:
        """Write the runs and delete the jobs whose leases were renewed (the others'
        runs say the lease was lost); the ids deleted."""
        lease_ms = group[0].inflight.queue.lease_ms
        owned = {lease.job_id for lease in renewed}
        with self._lock:
            for lease in renewed:
                self._unacked[(queue, lease.job_id)] = (lease, lease_ms)
        for o in group:  # renewed through _unacked from now on, until acked
            if o.inflight.job.id in owned:
                o.inflight.lease_released = True
        writes, deletes = [], []
        for o, run in zip(group, runs, strict=True):
            if o.inflight.job.id in owned:
                deletes.append((job_namespace(queue), o.inflight.job.id))
            else:
                run = self._lost_lease(o)
            if run is not None:
                writes.append(run)
        # Counted as completed once recorded (now, or when writes held by an outage land).
        recorded = self._write_runs(writes, deletes, then=lambda: self.process.count("completed", len(group)))
        return owned if recorded else set()

    def _lost_lease(self, outcome: Outcome) -> RecordWrite | None:
        """The run of a job completed after its lease was lost (the job stays with its
        new holder), saying so; None when runs are not recorded."""
        inflight = outcome.inflight
        if inflight.run is None:
            return None
        with inflight.lock:
            inflight.run["timeline"][-1]["reason"] = "completed after its lease was lost"
        return self._run_write(inflight, "completed")

    def _settle_other(self, settling: Settling) -> bool:
        """Settle a failed, retried, returned or lost attempt; False (or BackendUnavailable)
        when an outage holds it, to go on from where it stands on a retry."""
        outcome = settling.outcome
        inflight, job = outcome.inflight, outcome.inflight.job
        engine, now = self.process.engine, now_ms()
        if outcome.kind == "interrupted" and not inflight.started:
            # Held, never started: its durable row was never touched (still waiting,
            # the attempt uncounted), so only the lease goes back.
            self._releasing(inflight, lambda: engine.hot.release(
                job.queue, inflight.lease, Signal(job.id, job.priority, None, job.lifo), now))
            self.process.count("returned")
            return True
        if self._pending_jobs and not self._write_runs([], [], all_jobs=True):
            return False  # the active state is not stored yet: held, its lease renewed

        if outcome.kind == "lost":  # someone else holds the job now: record the attempt only
            run = self._finish(outcome, "failed", "lease lost; the job is returned by the rescuer")
            if run:
                self._write_runs([run], [])
            return True
        if settling.plan is None:  # once: a retry after an outage must not count the error again
            settling.plan = self._plan(outcome, now)
        final, signal, reason = settling.plan
        if not final:
            assert signal is not None
            return self._give_back(settling, signal, reason)
        if not settling.closed:
            if not self._releasing(inflight, lambda: engine.hot.ack(job.queue, [inflight.lease])):
                self._write_runs([r for r in [self._finish(outcome, RUN_STATUS[outcome.kind], reason)] if r], [])
                return True
            settling.closed = True
        run = self._finish(outcome, RUN_STATUS[outcome.kind], reason)
        puts = [run] if run else []
        if inflight.queue.dead_letter or outcome.kind == "cancelled":
            job.die(reason, now)
            puts.append(RecordWrite(dlq_namespace(job.queue), job.id, job.to_value()))
        if outcome.kind == "cancelled":
            try:
                forget_cancels(engine.hot, [job.id])
            except OqronError as exc:  # after the ack: a retry must not redo it; the request only lingers
                logger.warning("could not forget the cancel request of %s/%s: %s", job.queue, job.id, exc,
                               extra={"action": "finisher.after"})
        def buried() -> None:  # now, or once a write held by an outage lands
            self.process.count("dead")
            self.process.hook(inflight, "dead", outcome.error)
            on_parent_done(engine.durable, engine.hot, job, "dead")

        self._write_runs(puts, [(job_namespace(job.queue), job.id)], then=buried)
        return True

    def _plan(self, outcome: Outcome, now: int) -> tuple[bool, Signal | None, str]:
        """The job's next state (final, signal to give it back with, reason), set on it."""
        inflight, job = outcome.inflight, outcome.inflight.job
        if outcome.kind == "interrupted":
            job.status, job.attempts = "waiting", max(job.attempts - 1, 0)  # the attempt is not counted
            return False, Signal(job.id, job.priority, None, job.lifo), "worker shutting down; returned"
        if outcome.error:
            job.record_error({**outcome.error, "attempt": job.attempts,
                              "runId": inflight.run["id"] if inflight.run else None})
        if outcome.kind in ("discarded", "cancelled") or job.attempts >= job.max_attempts:
            return True, None, {"cancelled": f"cancelled: {inflight.cancel_reason or 'by request'}",
                                "discarded": f"discarded: {(outcome.error or {}).get('message', '')}"}.get(
                outcome.kind, f"{outcome.kind} on attempt {job.attempts} of {job.max_attempts}")
        delay = Backoff.from_value(job.backoff).delay_ms(job.attempts)
        job.status, job.run_at = "delayed", now + delay
        return False, Signal(job.id, job.priority, job.run_at, job.lifo), f"{outcome.kind}; retry in {delay} ms"

    def _give_back(self, settling: Settling, signal: Signal, reason: str) -> bool:
        """Store the job's next state, guarded by our lease token, then release it; each
        step once, an outage holding the rest."""
        outcome = settling.outcome
        inflight, job = outcome.inflight, outcome.inflight.job
        engine = self.process.engine
        if not settling.closed:
            settling.token = job.lease_token
            job.lease_token, job.worker_id, job.updated_at = None, None, now_ms()
            settling.run = self._finish(outcome, RUN_STATUS[outcome.kind], reason)
            settling.closed = True
        if settling.stored is None:
            settling.stored = self._store_guarded(job, settling.token)
        if settling.stored and not inflight.lease_released:
            self._releasing(inflight, lambda: engine.hot.release(job.queue, inflight.lease, signal, now_ms()))
        if settling.run:
            self._write_runs([settling.run], [])
        self.process.count("retried" if outcome.kind != "interrupted" else "interrupted")
        if outcome.kind != "interrupted":
            self.process.hook(inflight, "failed", outcome.error)
        return True

    def _store_guarded(self, job: Job, token: Any) -> bool:
        """Write the job's next state if our lease token is still its own; with less
        error detail if it is over the record size limit."""
        durable, namespace = self.process.engine.durable, job_namespace(job.queue)
        return write_shedding(
            lambda value: durable.compare_and_set(namespace, job.id, expect={"leaseToken": token}, value=value),
            job.to_value(), shed_error_detail)

    def _done(self, inflight: Inflight) -> None:
        if inflight.run is not None:
            with self._lock:
                self.running_runs.pop(inflight.run["id"], None)
                self._dirty.discard(inflight.run["id"])
        self.process.forget(inflight)
