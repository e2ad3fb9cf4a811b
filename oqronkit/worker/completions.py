"""Settling completed attempts: record the run, delete the job, release the lease.

Where the planes share one database (:attr:`HotPlane.transaction_domain`), the three
happen in one transaction. Elsewhere in steps: renew the lease first (it proves the
job is still ours), write the run and delete the job, and release the lease only once
the deletion landed; an outage on either plane holds the batch, leases renewed, and
retries it on every flush.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Callable

from ..backends.hot_types import Lease
from ..clock import now_ms
from ..durable import RecordWrite
from ..errors import BackendUnavailable, OqronError
from ..namespaces import job_namespace
from ..queues.dependencies import on_parent_done
from .inflight import Outcome
from .run_writer import RunWriter
from .state import WorkerState

logger = logging.getLogger(__name__)
Runs = list[RecordWrite | None]


class Completions:
    """``lease_lock`` is held while leases are marked released (a renewal landing after
    an ack would re-create the lease); ``done`` forgets settled attempts."""

    def __init__(self, state: WorkerState, writer: RunWriter, *, lease_lock: threading.Lock,
                 done: Callable[[list[Outcome]], None]) -> None:
        self.state = state
        self.writer = writer
        self.lease_lock = lease_lock
        self._done = done
        self._lock = threading.Lock()
        # Completed jobs whose deletion waits for the durable plane: their leases are
        # released (acked) only once it lands, and renewed by the heartbeat meanwhile,
        # so neither the rescuer nor the reconciler hands them out again.
        self._unacked: dict[tuple[str, str], tuple[Lease, int]] = {}
        # Completed jobs whose ownership check (extend) met a hot-plane outage: held with
        # their runs and retried on every flush; only the plane's answer can say "lost".
        self._unconfirmed: list[tuple[str, list[Outcome], Runs]] = []
        # Asked on first use: the planes open when the worker starts, not when it is built.
        self._one_transaction: bool | None = None

    def held_back(self) -> bool:
        return bool(self._unacked or self._unconfirmed)

    def unrecorded_ids(self) -> set[str]:
        with self._lock:
            jobs = {job_id for _, job_id in self._unacked}
        jobs.update(o.inflight.job.id for _, group, _ in self._unconfirmed for o in group)
        return jobs

    def known_tokens(self, queue: str) -> set[int]:
        """The lease tokens of ``queue`` this holds: unacked, or held unconfirmed."""
        with self._lock:
            tokens = {lease.token for (q, _), (lease, _ms) in self._unacked.items() if q == queue}
        tokens.update(o.inflight.lease.token for q, group, _ in list(self._unconfirmed) if q == queue for o in group)
        return tokens

    def unacked_leases(self, grouped: dict[str, tuple[int, list[Lease]]]) -> None:
        """Add, per queue, the leases of completed jobs waiting for their deletion."""
        with self._lock:
            for (queue, _), (lease, lease_ms) in self._unacked.items():
                grouped.setdefault(queue, (lease_ms, []))[1].append(lease)

    def renewed(self, queue: str, leases: list[Lease], lost: list[Lease]) -> None:
        with self._lock:
            for lease in leases:
                key = (queue, lease.job_id)
                if key in self._unacked:
                    self._unacked[key] = (lease, self._unacked[key][1])
            for lease in lost:
                self._unacked.pop((queue, lease.job_id), None)

    def ack_unacked(self) -> None:
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
                self.state.hot.ack(queue, leases)
            except OqronError as exc:
                # It may have run or not: the queue's claim loop asks the plane once it answers
                # and acks again what is still held (recovery.py), so no lease waits to lapse.
                logger.warning("could not release %d completed job(s) of %s; released again once the hot plane "
                               "answers: %s", len(leases), queue, exc, extra={"action": "finisher.ack_failed"})
                self.state.unsure.mark(queue)

    def settle(self, outcomes: list[Outcome], *, held_back: Callable[[], bool]) -> None:
        """Settle completions; in steps while ``held_back()`` (earlier writes wait: they go first)."""
        by_queue: dict[str, list[Outcome]] = defaultdict(list)
        for o in outcomes:
            by_queue[o.inflight.job.queue].append(o)
        deleted: set[tuple[str, str]] = set()
        for queue, group in by_queue.items():
            # Closed as completed; a run whose lease turns out lost says so (lost_lease).
            runs: Runs = [self.writer.close(o, "completed") for o in group]
            released = None
            if self._settles_in_one_transaction() and not held_back():
                released = self._release_at_once(queue, group, runs)
            if released is None:
                released = self._release_in_steps(queue, group, runs)
            deleted |= {(queue, job_id) for job_id in released}
        self._done(outcomes)
        members = [(o.inflight.job, o.output) for o in outcomes
                   if o.inflight.job.group and (o.inflight.job.queue, o.inflight.job.id) in deleted]
        if members:
            from ..groups.ledger import members_completed  # jobs of a group only: a plain worker never loads it

            try:
                members_completed(self.state.durable, self.state.hot, members)
            except Exception as exc:  # the group sweep settles them later
                logger.warning("could not settle %d group member(s): %s", len(members), exc,
                               exc_info=not isinstance(exc, OqronError), extra={"action": "finisher.after"})
        for o in outcomes:
            job = o.inflight.job
            if (job.queue, job.id) in deleted and job.dependents:
                try:
                    on_parent_done(self.state.durable, self.state.hot, job, "completed")
                except Exception as exc:  # the dependency sweep resolves them later
                    logger.warning("could not resolve the dependents of %s/%s: %s", job.queue, job.id, exc,
                                   exc_info=not isinstance(exc, OqronError), extra={"action": "finisher.after"})
            if (job.queue, job.id) in deleted:  # a lost lease's job completes (and fires) elsewhere
                self.state.hook(o.inflight, "completed", output=o.output)

    def _settles_in_one_transaction(self) -> bool:
        if self._one_transaction is None:
            self._one_transaction = self.state.engine.settles_in_one_transaction
        return self._one_transaction

    def _release_at_once(self, queue: str, group: list[Outcome], runs: Runs) -> set[str] | None:
        """Write the runs, release the leases and delete the jobs in one transaction; the
        ids released, or None (nothing written) to settle in steps."""
        with self.lease_lock:  # before the release: a renewal after it would recreate the lease
            for o in group:
                o.inflight.lease_released = True
        try:
            released = self.state.durable.apply_and_release(
                puts=[run for run in runs if run is not None], namespace=job_namespace(queue), queue=queue,
                leases=[(o.inflight.lease.job_id, o.inflight.lease.token) for o in group])
        except Exception as exc:
            # An outage, or a record the plane refuses: the steps below hold or shed it.
            logger.warning("could not settle %d completed job(s) of %s in one transaction; in steps: %s",
                           len(group), queue, exc, extra={"action": "finisher.settle_in_steps"})
            for o in group:
                o.inflight.lease_released = False
            return None
        for o in group:
            if o.inflight.job.id in released:
                self.writer.written_job(o.inflight.job)
        self.state.count("completed", len(released))
        # Not released: held under another token, or gone from the hot plane entirely (its
        # rows lost, a flush). The steps tell them apart: their renewal re-creates a lost
        # lease under our token, so such a completion is kept, not run again.
        rest = [(o, run) for o, run in zip(group, runs, strict=True) if o.inflight.job.id not in released]
        for o, _run in rest:
            o.inflight.lease_released = False
        if rest:
            released |= self._release_in_steps(queue, [o for o, _ in rest], [run for _, run in rest])
        return released

    def _release_in_steps(self, queue: str, group: list[Outcome], runs: Runs) -> set[str]:
        """Renew the leases (ownership first; it also gives the durable write time), write
        the runs and delete the owned jobs, then release their leases once the deletion
        has landed (ack_unacked); the ids deleted. An outage holds the batch instead."""
        lease_ms = group[0].inflight.queue.lease_ms
        try:
            renewed = self.state.hot.extend(queue, [o.inflight.lease for o in group], lease_ms=lease_ms,
                                            now=now_ms())
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
        return self._record(queue, group, runs, renewed)

    def confirm_held(self) -> None:
        """Retry the ownership check of completions held by a hot-plane outage, in order;
        the first that meets the outage again keeps itself and the rest held."""
        # Each stays listed until _record has it in _unacked: a worker asking what leases it
        # holds (recovery.py) must know these all along, or it would run them again.
        while self._unconfirmed:
            queue, group, runs = self._unconfirmed[0]
            lease_ms = group[0].inflight.queue.lease_ms
            try:
                renewed = self.state.hot.extend(queue, [o.inflight.lease for o in group],
                                                lease_ms=lease_ms, now=now_ms())
            except BackendUnavailable:
                return
            self._record(queue, group, runs, renewed)
            self._unconfirmed.pop(0)

    def _record(self, queue: str, group: list[Outcome], runs: Runs, renewed: list[Lease]) -> set[str]:
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
                run = self.writer.lost_lease(o)
            if run is not None:
                writes.append(run)
        # Counted as completed once recorded (now, or when writes held by an outage land).
        recorded = self.writer.write(writes, deletes, then=lambda: self.state.count("completed", len(group)))
        return owned if recorded else set()
