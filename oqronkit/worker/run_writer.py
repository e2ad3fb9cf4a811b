"""The finisher's write-behind buffer: run records (running ones flushed while they run,
closed ones with their outcome), the jobs' "active" state, finished jobs' deletions,
and what an outage held of all of them, retried on every flush.

Only the finisher thread writes through it, so a background flush of a running run can
never overwrite the final version: both happen in order, on one thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ..clock import now_ms
from ..durable import RecordWrite
from ..errors import OqronError
from ..namespaces import RUNS
from ..queues.jobs import Job
from ..queues.runs import finish_run
from .inflight import Inflight, Outcome
from .refusals import apply_refusing, is_outage
from .state import WorkerState

logger = logging.getLogger(__name__)
ACTIVE_STATE_AFTER = 0.5  # seconds a job runs before its "active" state is written behind
RUN_WRITE_AFTER = 0.5  # seconds a run runs before it is written behind (before it ends)


class RunWriter:
    """``on_written`` runs after every write that landed (the settler releases the
    leases of the completed jobs just deleted)."""

    def __init__(self, state: WorkerState, *, on_written: Callable[[], None]) -> None:
        self.state = state
        self._on_written = on_written
        self.lock = threading.Lock()
        self.running_runs: dict[str, Inflight] = {}
        self._dirty: set[str] = set()
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
        self.max_buffered_runs = 50_000

    # -- called from other threads ----------------------------------------------------

    def started(self, inflights: list[Inflight]) -> None:
        with self.lock:
            for inflight in inflights:
                assert inflight.run is not None  # started attempts have runs
                run_id = inflight.run["id"]
                self.running_runs[run_id] = inflight
                self._dirty.add(run_id)
                job = inflight.job
                self._pending_jobs[(job.namespace, job.id)] = (job, inflight.began)

    def mark_dirty(self, run_id: str) -> None:
        with self.lock:
            self._dirty.add(run_id)

    # -- the finisher thread -------------------------------------------------------------

    def held_back(self) -> bool:
        """Whether writes wait on an earlier failure."""
        return bool(self._pending_runs or self._pending_deletes or self._pending_after)

    def has_pending_jobs(self) -> bool:
        return bool(self._pending_jobs)

    def written_job(self, job: Job) -> None:
        """The job's row was settled by another path: its active state is moot."""
        with self.lock:
            self._pending_jobs.pop((job.namespace, job.id), None)

    def ended(self, inflights: list[Inflight]) -> None:
        """The attempts are settled: their runs no longer run."""
        with self.lock:
            for inflight in inflights:
                if inflight.run is not None:
                    self.running_runs.pop(inflight.run["id"], None)
                    self._dirty.discard(inflight.run["id"])

    def unrecorded_ids(self) -> set[str]:
        """Jobs whose run or deletion waits in held writes."""
        jobs = {job_id for _, job_id in self._pending_deletes}
        jobs.update(w.value.get("jobId") or w.id if w.namespace == RUNS else w.id for w in self._pending_runs)
        return jobs

    def flush(self) -> None:
        """Write behind the runs busy for a while (progress, logs) and any held writes."""
        ripe = time.monotonic() - RUN_WRITE_AFTER
        with self.lock:
            # Only runs busy for a while: most end sooner and are written once, as a
            # first-time insert; the younger ones wait for a later flush.
            self._dirty.intersection_update(self.running_runs)
            ids = [r for r in self._dirty if self.running_runs[r].began <= ripe]
            self._dirty.difference_update(ids)
            dirty = [self.running_runs[r] for r in ids]
        writes = list(self._pending_runs)
        if self.state.record_runs:
            for inflight in dirty:
                assert inflight.run is not None
                inflight.run_stored = True
                writes.append(RecordWrite(RUNS, inflight.run["id"], inflight.run_snapshot(), checked=True))
        if writes or self._pending_deletes or self._pending_jobs:
            self.write(writes, [])

    def write(self, runs: list[RecordWrite], deletes: list[tuple[str, str]], *, all_jobs: bool = False,
              then: Callable[[], None] | None = None) -> bool:
        """Write runs (and delete finished jobs) in one transaction, after any earlier
        writes still waiting, with the active state of jobs running for a while (of
        every started job with ``all_jobs``); on failure keep them all for the next flush."""
        pending_ids = {w.id for w in runs}
        doomed = list(dict.fromkeys(self._pending_deletes + deletes))
        pending = self._take_active_states(set(doomed), all_jobs=all_jobs)
        jobs = [RecordWrite(job.namespace, job.id, job.to_value()) for job, _ in pending]
        puts = jobs + [w for w in self._pending_runs if w.id not in pending_ids] + runs
        try:
            # What the plane refuses for its content is left out or shed (refusals.py):
            # only an outage holds the writes.
            apply_refusing(self.state.durable, puts, doomed)
        except Exception as exc:
            self._hold(exc, puts, doomed, jobs, pending, then)
            return False
        self._pending_runs, self._pending_deletes = [], []
        self._on_written()
        after, self._pending_after = [*self._pending_after, *([then] if then is not None else [])], []
        for step in after:
            try:
                step()
            except Exception as exc:  # the sweeper still resolves dependents; nothing is lost
                logger.warning("a step after a durable write failed: %s", exc, exc_info=not isinstance(exc, OqronError),
                               extra={"action": "finisher.after"})
        return True

    def _take_active_states(self, gone: set[tuple[str, str]], *, all_jobs: bool) -> list[tuple[Job, float]]:
        """The active states to write now (jobs being deleted need none)."""
        started_before = time.monotonic() - ACTIVE_STATE_AFTER
        pending: list[tuple[Job, float]] = []
        with self.lock:
            for key, (job, began) in list(self._pending_jobs.items()):
                if key in gone:
                    del self._pending_jobs[key]
                elif all_jobs or began <= started_before:
                    pending.append((job, began))
                    del self._pending_jobs[key]
        return pending

    def _hold(self, exc: Exception, puts: list[RecordWrite], doomed: list[tuple[str, str]], jobs: list[RecordWrite],
              pending: list[tuple[Job, float]], then: Callable[[], None] | None) -> None:
        """Keep a failed write for the next flush: runs and dead letters (a dead letter's
        job deletion is held with it, so neither may go without the other); the jobs'
        running state is queued again. Only the oldest runs give way when the buffer is full."""
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
        with self.lock:
            for job, began in pending:
                self._pending_jobs.setdefault((job.namespace, job.id), (job, began))
        logger.error(
            "durable plane unavailable: %d run record(s) and %d job deletion(s) held for retry: %s",
            len(self._pending_runs), len(doomed), exc, exc_info=None if is_outage(exc) else exc,
            extra={"action": "runs.buffer"},
        )

    # -- closing runs ------------------------------------------------------------------

    def close(self, outcome: Outcome, status: str, reason: str | None = None) -> RecordWrite | None:
        """Close the attempt's run with ``status``: its write, or None (no run to close:
        held, never started; or runs are not recorded)."""
        inflight = outcome.inflight
        if inflight.run is None:
            return None
        with inflight.lock:
            finish_run(inflight.run, status, output=outcome.output, error=outcome.error, reason=reason,
                       limit=self.state.config.run_timeline_limit)
        return self.run_write(inflight, status)

    def run_write(self, inflight: Inflight, status: str) -> RecordWrite | None:
        """The closed run as a write (a plain insert the first time), or None when runs
        are not recorded."""
        if not self.state.record_runs or inflight.run is None:
            return None
        ttl = inflight.queue.completed_run_ttl_ms if status == "completed" else None
        new = not inflight.run_stored
        inflight.run_stored = True  # any later write of it is an upsert
        # checked: the input is the decoded payload (the handler has a copy), the
        # output passed executor.classify's check, the rest the worker wrote.
        return RecordWrite(RUNS, inflight.run["id"], inflight.run_snapshot(),
                           now_ms() + ttl if ttl is not None else None, new=new, checked=True)

    def lost_lease(self, outcome: Outcome) -> RecordWrite | None:
        """The run of a job completed after its lease was lost (the job stays with its
        new holder), saying so; None when runs are not recorded."""
        inflight = outcome.inflight
        if inflight.run is None:
            return None
        with inflight.lock:
            inflight.run["timeline"][-1]["reason"] = "completed after its lease was lost"
        return self.run_write(inflight, "completed")
