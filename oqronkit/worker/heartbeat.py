"""The worker's heartbeat: lease renewal, timeouts, cancel requests, pause state, the
live overlay and the worker registry, on one thread that handler code cannot starve
(handlers run on other threads; a GIL-bound handler still yields every few ms)."""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..clock import now_ms
from ..errors import OqronError
from ..live import RUN_TTL_MS, WorkerInfo, cancel_requests, live_run, publish_runs, publish_worker
from ..namespaces import QUEUE
from ..queues.runs import describe_error
from ..services.hot_reset import acknowledge
from .finisher import Finisher
from .inflight import Inflight, Outcome
from .state import WorkerState

if TYPE_CHECKING:
    from ..queues.queue import Queue

logger = logging.getLogger(__name__)
TICK = 0.1
CANCEL_EVERY = 0.5
PAUSE_EVERY = 1.0
REGISTRY_EVERY = 5.0


class Heartbeat:
    """``inflights`` lists the attempts this process holds, ``settle`` takes an outcome
    (a timeout, a lost lease), ``worker_info`` describes the process for the registry."""

    def __init__(self, state: WorkerState, finisher: Finisher, *, queues: list[Queue],
                 inflights: Callable[[], list[Inflight]], settle: Callable[[Outcome], None],
                 worker_info: Callable[[], WorkerInfo]) -> None:
        self.state = state
        self.finisher = finisher
        self._queue_names = [q.name for q in queues]
        self._inflights = inflights
        self._settle = settle
        self._worker_info = worker_info
        leases = [q.lease_ms for q in queues] or [30_000]
        self.extend_every = max(min(min(leases) / 3000, 10.0), 0.2)
        self._last: dict[str, float] = defaultdict(float)

    def _due(self, name: str, every: float) -> bool:
        now = time.monotonic()
        if now - self._last[name] >= every:
            self._last[name] = now
            return True
        return False

    def loop(self, stop: threading.Event) -> None:
        resets = self.state.hot.resets
        while not stop.wait(TICK):
            if self.state.hot.resets != resets:
                resets = self._after_reset(resets)
            for name, every, step in (
                ("timeouts", TICK, self.check_timeouts),
                ("overlay", TICK, self.flush_overlay),
                ("extend", self.extend_every, self.extend_leases),
                ("cancel", CANCEL_EVERY, self.check_cancels),
                ("registry", REGISTRY_EVERY, self.publish_registry),
            ):
                if self._due(name, every):
                    try:
                        step()
                    except OqronError as exc:
                        logger.warning("heartbeat step %s failed: %s", name, exc, extra={"action": f"heartbeat.{name}"})

    def _after_reset(self, seen: int) -> int:
        """A crash emptied the hot plane: re-create our leases now, then tell the leader
        (services/hot_reset.py), which signals the waiting jobs again once all did."""
        resets = self.state.hot.resets
        try:
            self._last["extend"] = time.monotonic()
            self.extend_leases()
            acknowledge(self.state.hot, self.state.worker_id)
        except OqronError as exc:
            logger.warning("could not re-create leases after the hot plane's reset: %s", exc,
                           extra={"action": "heartbeat.reset"})
            return seen  # tried again next tick
        return resets

    def control_loop(self, stop: threading.Event) -> None:
        """Steps that read the durable plane, on their own thread: a durable plane that
        hangs (a Postgres outage waits out the pool timeout) must never hold up lease
        renewal on the hot plane."""
        while not stop.wait(PAUSE_EVERY):
            try:
                self.refresh_pause()
            except OqronError as exc:
                logger.warning("heartbeat step pause failed: %s", exc, extra={"action": "heartbeat.pause"})

    def check_timeouts(self) -> None:
        now = time.monotonic()
        for inflight in self._inflights():
            if inflight.deadline is not None and now >= inflight.deadline and not inflight.settled:
                error = describe_error(TimeoutError(f"timed out after {inflight.job.timeout_ms} ms"), kind="Timeout")
                # Settled before the handler is told: one that notices and returns at once
                # must not win with a "cancelled" outcome (dead-lettered, retries unused).
                self._settle(Outcome(inflight, "timeout", error=error))
                inflight.request_cancel("timeout")

    def flush_overlay(self) -> None:
        """Publish runs started (or changed) since the last tick, in one write, every
        tick: a run shows there within 0.1 s of starting, and a job done sooner costs
        no hot-plane write at all."""
        dirty = [i for i in self._inflights() if i.overlay_dirty and i.run is not None and not i.settled]
        if dirty:
            self.publish_overlay(dirty)
            for inflight in dirty:
                if inflight.run is not None:
                    self.finisher.mark_dirty(inflight.run["id"])

    def publish_overlay(self, inflights: list[Inflight]) -> None:
        """Write running runs through to the hot plane for the board's live view."""
        runs = []
        for inflight in inflights:
            with inflight.lock:
                if inflight.run is None:
                    continue
                inflight.overlay_published = True
                runs.append(live_run(inflight.run))
                inflight.overlay_dirty = False
        try:
            publish_runs(self.state.hot, runs, ttl_ms=RUN_TTL_MS)
        except OqronError as exc:
            logger.warning("could not publish the live run overlay: %s", exc, extra={"action": "overlay.failed"})

    def extend_leases(self) -> None:
        with self.finisher.lease_lock:  # no lease is marked released meanwhile
            self._extend_leases()

    def _extend_leases(self) -> None:
        by_queue: dict[str, list[Inflight]] = defaultdict(list)
        for inflight in self._inflights():
            # Settled attempts too: their outcome may wait on a slow durable plane in the
            # finisher, which still needs the lease to complete or retry the job.
            if not inflight.lease_lost and not inflight.lease_released:
                by_queue[inflight.job.queue].append(inflight)
        hot, finisher = self.state.hot, self.finisher
        for queue, (lease_ms, leases) in finisher.unacked_leases().items():
            renewed = hot.extend(queue, leases, lease_ms=lease_ms, now=now_ms())
            still = {le.job_id for le in renewed}
            finisher.renewed(queue, renewed, [le for le in leases if le.job_id not in still])
        for queue, group in by_queue.items():
            lease_ms = group[0].queue.lease_ms
            renewed = hot.extend(queue, [i.lease for i in group], lease_ms=lease_ms, now=now_ms())
            kept = {le.job_id: le for le in renewed}
            self.state.hot_ok = True
            for inflight in group:
                if inflight.job.id in kept:
                    inflight.lease = kept[inflight.job.id]
                elif not inflight.settled:
                    logger.warning("lease of %s/%s was taken over; stopping this attempt", queue, inflight.job.id,
                                   extra={"action": "worker.lease_lost"})
                    inflight.lease_lost = True
                    self._settle(Outcome(inflight, "lost"))  # before the handler is told, as for a timeout
                    inflight.request_cancel("lease lost")

    def check_cancels(self) -> None:
        inflights = {i.job.id: i for i in self._inflights() if not i.settled}
        if not inflights:
            return
        requested = cancel_requests(self.state.hot, list(inflights))
        for job_id, reason in requested.items():
            inflights[job_id].request_cancel(reason or "cancelled")

    def refresh_pause(self) -> None:
        records = self.state.durable.get_many(QUEUE, self._queue_names)
        self.state.paused = {r.id for r in records if r.value.get("paused")}

    def publish_registry(self) -> None:
        publish_worker(self.state.hot, self._worker_info())
