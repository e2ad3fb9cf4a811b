"""The worker's heartbeat: lease renewal, timeouts, cancel requests, pause state, the
live overlay and the worker registry, on one thread that handler code cannot starve
(handlers run on other threads; a GIL-bound handler still yields every few ms)."""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from typing import TYPE_CHECKING

from ..clock import now_ms
from ..errors import OqronError
from ..live import RUN_TTL_MS, cancel_requests, live_run, publish_runs, publish_worker
from ..namespaces import QUEUE
from ..runs import describe_error
from .inflight import Inflight, Outcome

if TYPE_CHECKING:
    from .process import WorkerProcess

logger = logging.getLogger(__name__)
TICK = 0.1
CANCEL_EVERY = 0.5
PAUSE_EVERY = 1.0
REGISTRY_EVERY = 5.0


class Heartbeat:
    def __init__(self, process: WorkerProcess) -> None:
        self.process = process
        leases = [q.lease_ms for q in process.queues] or [30_000]
        self.extend_every = max(min(min(leases) / 3000, 10.0), 0.2)
        self._last: dict[str, float] = defaultdict(float)

    def _due(self, name: str, every: float) -> bool:
        now = time.monotonic()
        if now - self._last[name] >= every:
            self._last[name] = now
            return True
        return False

    def loop(self, stop: threading.Event) -> None:
        while not stop.wait(TICK):
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
        for inflight in self.process.all_inflight():
            if inflight.deadline is not None and now >= inflight.deadline and not inflight.settled:
                inflight.request_cancel("timeout")
                error = describe_error(TimeoutError(f"timed out after {inflight.job.timeout_ms} ms"), kind="Timeout")
                self.process.settle(Outcome(inflight, "timeout", error=error))

    def flush_overlay(self) -> None:
        """Publish runs started (or changed) since the last tick, in one write, every
        tick: a run shows there within 0.1 s of starting, and a job done sooner costs
        no hot-plane write at all."""
        dirty = [i for i in self.process.all_inflight() if i.overlay_dirty and i.run is not None and not i.settled]
        if dirty:
            self.publish_overlay(dirty)
            for inflight in dirty:
                self.process.finisher.mark_dirty(inflight.run["id"])

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
            publish_runs(self.process.engine.hot, runs, ttl_ms=RUN_TTL_MS)
        except OqronError as exc:
            logger.warning("could not publish the live run overlay: %s", exc, extra={"action": "overlay.failed"})

    def extend_leases(self) -> None:
        with self.process.finisher.lease_lock:  # no lease is marked released meanwhile
            self._extend_leases()

    def _extend_leases(self) -> None:
        by_queue: dict[str, list[Inflight]] = defaultdict(list)
        for inflight in self.process.all_inflight():
            # Settled attempts too: their outcome may wait on a slow durable plane in the
            # finisher, which still needs the lease to complete or retry the job.
            if not inflight.lease_lost and not inflight.lease_released:
                by_queue[inflight.job.queue].append(inflight)
        hot = self.process.engine.hot
        finisher = self.process.finisher
        for queue, (lease_ms, leases) in finisher.unacked_leases().items():
            renewed = hot.extend(queue, leases, lease_ms=lease_ms, now=now_ms())
            kept = {le.job_id for le in renewed}
            finisher.renewed(queue, renewed, [le for le in leases if le.job_id not in kept])
        for queue, group in by_queue.items():
            lease_ms = group[0].queue.lease_ms
            renewed = hot.extend(queue, [i.lease for i in group], lease_ms=lease_ms, now=now_ms())
            kept = {le.job_id: le for le in renewed}
            self.process.hot_ok = True
            for inflight in group:
                if inflight.job.id in kept:
                    inflight.lease = kept[inflight.job.id]
                elif not inflight.settled:
                    logger.warning("lease of %s/%s was taken over; stopping this attempt", queue, inflight.job.id,
                                   extra={"action": "worker.lease_lost"})
                    inflight.lease_lost = True
                    inflight.request_cancel("lease lost")
                    self.process.settle(Outcome(inflight, "lost"))

    def check_cancels(self) -> None:
        inflights = {i.job.id: i for i in self.process.all_inflight() if not i.settled}
        if not inflights:
            return
        requested = cancel_requests(self.process.engine.hot, list(inflights))
        for job_id, reason in requested.items():
            inflights[job_id].request_cancel(reason or "cancelled")

    def refresh_pause(self) -> None:
        names = [q.name for q in self.process.queues]
        records = self.process.engine.durable.get_many(QUEUE, names)
        self.process.paused = {r.id for r in records if r.value.get("paused")}

    def publish_registry(self) -> None:
        publish_worker(self.process.engine.hot, self.process.worker_info())
