"""The finisher thread: takes outcomes in batches and settles them on both planes
(completions.py for completed attempts, failures.py for every other), and writes
running runs behind (run_writer.py). One thread does all of it, so the writes of one
run happen in order."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ..backends.hot_types import Lease
from ..errors import OqronError
from ..live import forget_runs
from ..queues.runs import describe_error
from .completions import Completions
from .failures import Failures
from .inflight import Inflight, Outcome
from .outbox import Outbox
from .run_writer import RunWriter
from .state import WorkerState

logger = logging.getLogger(__name__)
BATCH = 500
FLUSH_EVERY = 0.5


class Finisher:
    """``forget`` drops settled attempts from their queues' buffers; ``has_inflight`` says
    whether any attempt is still held or running; ``on_batch`` runs after each batch
    (claiming may resume: the settle backlog shrank)."""

    def __init__(self, state: WorkerState, *, forget: Callable[[list[Inflight]], None],
                 has_inflight: Callable[[], bool], on_batch: Callable[[], None]) -> None:
        self.state = state
        self._forget = forget
        self._has_inflight = has_inflight
        self._on_batch = on_batch
        self.outcomes: Outbox[Outcome] = Outbox()
        # Held by the heartbeat from reading the leases to renew until renewed, and here
        # while leases are marked released: a renewal landing after an ack re-creates it.
        self.lease_lock = threading.Lock()
        self.runs = RunWriter(state, on_written=self._written)
        self.completions = Completions(state, self.runs, lease_lock=self.lease_lock, done=self._done_all)
        self.failures = Failures(state, self.runs, lease_lock=self.lease_lock)
        self._last_flush = time.monotonic()
        # Set by the stop: until then (monotonic), held writes are retried before the loop ends.
        self.retry_until = 0.0

    # -- called from other threads ----------------------------------------------------

    def started(self, inflights: list[Inflight]) -> None:
        self.runs.started(inflights)

    def submit(self, outcome: Outcome) -> None:
        self.outcomes.put(outcome)

    def mark_dirty(self, run_id: str) -> None:
        self.runs.mark_dirty(run_id)

    def unacked_leases(self) -> dict[str, tuple[int, list[Lease]]]:
        """Per queue: (lease ms, leases of settled jobs waiting for a plane: completed
        jobs' deletions, and outcomes held by an outage)."""
        grouped: dict[str, tuple[int, list[Lease]]] = {}
        self.completions.unacked_leases(grouped)
        self.failures.add_held_leases(grouped)
        return grouped

    def known_tokens(self, queue: str) -> set[int]:
        """Lease tokens of ``queue`` this holds for settled attempts (recovery.py)."""
        return self.completions.known_tokens(queue) | self.failures.known_tokens(queue)

    def renewed(self, queue: str, leases: list[Lease], lost: list[Lease]) -> None:
        """The heartbeat renewed (or lost) unacked leases."""
        self.completions.renewed(queue, leases, lost)
        self.failures.renewed(queue, leases, lost)

    def unrecorded(self) -> int:
        """Jobs whose outcome waits in held writes (an outage): not recorded yet."""
        return len(self.completions.unrecorded_ids() | self.failures.unrecorded_ids() | self.runs.unrecorded_ids())

    # -- the finisher thread -------------------------------------------------------------

    def loop(self, stop: threading.Event) -> None:
        while True:
            batch = self._take_batch(timeout=0.1)
            if batch:
                self._settle(batch)
                self._on_batch()
            if time.monotonic() - self._last_flush >= FLUSH_EVERY:
                self.flush_running()
            if stop.is_set() and self.outcomes.empty() and not self._has_inflight():
                self.flush_running()
                if not self._held_back() or time.monotonic() >= self.retry_until:
                    return
                stop.wait(FLUSH_EVERY)  # an outage holds writes: retry them until the drain deadline

    def flush_running(self) -> None:
        """Retry what an outage held, then write behind the runs still running."""
        self._last_flush = time.monotonic()
        self.completions.confirm_held()
        self.failures.retry_held()
        self.runs.flush()

    def _take_batch(self, timeout: float) -> list[Outcome]:
        return self.outcomes.take(BATCH, timeout)

    def _held_back(self) -> bool:
        """Whether writes or leases wait on an earlier failure: they go first, in steps."""
        return self.runs.held_back() or self.completions.held_back() or self.failures.held_back()

    def _written(self) -> None:
        self.completions.ack_unacked()

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
            try:
                # Held before it is forgotten: its lease renewal passes from one to the other.
                self.failures.settle(outcome)
            finally:
                self._done(outcome)

    def _settle_completed_isolating(self, completed: list[Outcome]) -> list[Outcome]:
        """Settle completed outcomes; when that raises, each again on its own: the
        failures to settle instead, one per outcome that raises alone (with the reason)."""
        try:
            self.completions.settle(completed, held_back=self._held_back)
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
                forget_runs(self.state.hot, ids)
            except OqronError as exc:  # they lapse by their TTL instead
                logger.warning("could not clear %d run(s) from the live overlay: %s", len(ids), exc,
                               extra={"action": "overlay.failed"})

    def _done(self, outcome: Outcome) -> None:
        self._done_all([outcome])

    def _done_all(self, outcomes: list[Outcome]) -> None:
        """Forget settled attempts: one lock each for a whole batch, not one per job."""
        inflights = [o.inflight for o in outcomes]
        self.runs.ended(inflights)
        if self.state.metrics is not None:
            for outcome in outcomes:
                self.state.metrics.settled(outcome)
        self._forget(inflights)
