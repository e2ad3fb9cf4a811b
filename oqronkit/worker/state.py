"""What the parts of one worker process share: its identity and planes, the lock its
per-queue buffers wait on, the stop flag, the pause state and the statistics."""

from __future__ import annotations

import threading
from collections import Counter
from typing import TYPE_CHECKING, Any

from ..lifecycle import emit
from .inflight import Inflight

if TYPE_CHECKING:
    from ..config import OqronConfig
    from ..durable import DurablePlane
    from ..engine import Engine
    from ..hot import HotPlaneFacade
    from ..telemetry.worker_metrics import WorkerMetrics


class WorkerState:
    def __init__(self, engine: Engine, *, record_runs: bool, burst: bool, poll_interval: float) -> None:
        self.engine = engine
        self.config: OqronConfig = engine.config
        self.worker_id: str = engine.new_worker_id()
        self.record_runs = record_runs
        self.burst = burst
        self.poll_interval = poll_interval
        # A bare RLock: ``with`` on it runs in C, where a Condition adds two Python calls,
        # and the worker takes it several times per job.
        self.lock = threading.RLock()
        self.stopping = threading.Event()
        self.paused: set[str] = set()  # queue names, refreshed by the heartbeat's control loop
        self.hot_ok = True
        self.unsure = Unsure()  # queues whose claim or ack got no reply (recovery.py)
        self.last_claim_at: int | None = None
        self.stats: Counter[str] = Counter()
        self._stats_lock = threading.Lock()
        self.metrics: WorkerMetrics | None = None  # --metrics-port; None costs each hook one test

    @property
    def durable(self) -> DurablePlane:
        return self.engine.durable

    @property
    def hot(self) -> HotPlaneFacade:
        return self.engine.hot

    def count(self, stat: str, n: int = 1) -> None:
        """Add to a worker statistic (the heartbeat copies them from another thread)."""
        with self._stats_lock:
            self.stats[stat] += n

    def stats_snapshot(self) -> dict[str, int]:
        with self._stats_lock:
            return dict(self.stats)

    def hook(self, inflight: Inflight, event: str, **details: Any) -> None:
        """Fire a lifecycle event of the attempt (lifecycle.emit: its callbacks run on the
        signals thread; a callback that raises is logged, never more)."""
        if not (self.engine.registry.listeners.any or inflight.queue.lifecycle.listeners.any):
            return  # the usual case: no callback anywhere, no call per job
        emit(self.engine.registry, inflight.queue, event, inflight.job, **details)


class Unsure:
    """The queues of this process whose leases may differ from what it knows."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queues: set[str] = set()

    def mark(self, queue: str) -> None:
        with self._lock:
            self._queues.add(queue)

    def take(self, queue: str) -> bool:
        """Whether ``queue`` was marked, unmarking it (the caller marks it again if its
        check fails)."""
        with self._lock:
            if queue not in self._queues:
                return False
            self._queues.discard(queue)
            return True
