"""A worker process's Prometheus counters and histograms (``--metrics-port N``).

The worker calls these hooks where it already observes each event (claim, start,
outcome, settled, lease rescue); with metrics off its :class:`WorkerState` holds None
and each hook is one attribute test. Every series has a ``queue`` label; the children
of each queue are looked up once and kept in a :class:`QueueMetrics`.

Names and units follow Prometheus' conventions: counters end in ``_total``, durations
are in seconds (``oqron_run_duration_seconds``), sizes are plain counts.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError

if TYPE_CHECKING:
    from ..worker.inflight import Inflight, Outcome

logger = logging.getLogger(__name__)
# Handler durations from 5 ms to 10 minutes: the range job handlers live in.
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 600.0)
# Settling is a batched write: from a millisecond to seconds under an outage.
SETTLE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# Up to consumer.CLAIM_BATCH (150) jobs per claim.
CLAIM_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 150)
FAILED_KINDS = frozenset({"failed", "timeout", "discarded", "lost"})
# An outcome's run status (worker/failures.py's RUN_STATUS), the duration histogram's label.
RUN_STATUS = {"completed": "completed", "failed": "failed", "discarded": "failed", "timeout": "failed",
              "lost": "failed", "cancelled": "cancelled", "interrupted": "cancelled", "postponed": "held"}


def _client() -> Any:
    try:
        import prometheus_client
    except ImportError as exc:  # an optional dependency of the engine, a requirement of the board
        raise ConfigurationError(
            "--metrics-port needs the prometheus-client package: pip install \"oqronkit[prometheus]\"") from exc
    return prometheus_client


@dataclass(slots=True)
class QueueMetrics:
    """One queue's labelled children, looked up once."""

    started: Any
    completed: Any
    failed: Any
    retried: Any
    dead: Any
    claim_batch: Any
    settle: Any
    durations: dict[str, Any]


class WorkerMetrics:
    """The series of one worker process, in a registry of their own."""

    def __init__(self) -> None:
        client = _client()
        self.registry = client.CollectorRegistry()
        counter, histogram, r = client.Counter, client.Histogram, self.registry
        self._started = counter("oqron_jobs_started", "Attempts started (a handler given a slot).", ["queue"],
                                registry=r)
        self._completed = counter("oqron_jobs_completed", "Attempts that completed.", ["queue"], registry=r)
        self._failed = counter("oqron_jobs_failed", "Attempts that failed (error, timeout, discard, lost lease).",
                               ["queue"], registry=r)
        self._retried = counter("oqron_jobs_retried", "Failed attempts given back for another attempt.",
                                ["queue"], registry=r)
        self._dead = counter("oqron_jobs_dead", "Jobs that failed for good (dead-lettered, or dropped by a queue "
                                                "that keeps no dead letters).", ["queue"], registry=r)
        self._duration = histogram("oqron_run_duration_seconds", "Handler run time of an attempt, by run status.",
                                   ["queue", "status"], buckets=DURATION_BUCKETS, registry=r)
        self._claim_batch = histogram("oqron_claim_batch_size", "Jobs taken by one claim.", ["queue"],
                                      buckets=CLAIM_BUCKETS, registry=r)
        self._settle = histogram("oqron_settle_latency_seconds",
                                 "From an attempt's outcome to its settling by the finisher.", ["queue"],
                                 buckets=SETTLE_BUCKETS, registry=r)
        self._rescues = counter("oqron_lease_rescues", "Expired leases the leader's rescuer settled.", registry=r)
        self._queues: dict[str, QueueMetrics] = {}
        self._lock = threading.Lock()
        self._server: Any = None

    def queue(self, name: str) -> QueueMetrics:
        found = self._queues.get(name)
        if found is None:
            with self._lock:
                found = self._queues.get(name) or QueueMetrics(
                    started=self._started.labels(name), completed=self._completed.labels(name),
                    failed=self._failed.labels(name), retried=self._retried.labels(name),
                    dead=self._dead.labels(name), claim_batch=self._claim_batch.labels(name),
                    settle=self._settle.labels(name),
                    durations={s: self._duration.labels(name, s) for s in set(RUN_STATUS.values())})
                self._queues[name] = found
        return found

    # -- the worker's hooks ------------------------------------------------------------

    def claimed(self, queue: str, count: int) -> None:
        self.queue(queue).claim_batch.observe(count)

    def started(self, inflights: list[Inflight]) -> None:
        for inflight in inflights:
            self.queue(inflight.job.queue).started.inc()

    def outcome(self, outcome: Outcome) -> None:
        """An attempt's outcome won (process.settle): its run time, and the settle clock."""
        inflight = outcome.inflight
        inflight.settle_began = now = time.monotonic()
        if inflight.started:
            status = RUN_STATUS.get(outcome.kind, "failed")
            self.queue(inflight.job.queue).durations[status].observe(now - inflight.began)

    def settled(self, outcome: Outcome) -> None:
        """The finisher settled the outcome: count it (a retry's next state and a
        burial were decided by then: the job's status says which)."""
        inflight, kind = outcome.inflight, outcome.kind
        series = self.queue(inflight.job.queue)
        if inflight.settle_began:
            series.settle.observe(time.monotonic() - inflight.settle_began)
        if kind == "completed":
            series.completed.inc()
            return
        if kind in FAILED_KINDS:
            series.failed.inc()
            if kind == "lost":  # another worker holds the job: its fate is not ours to count
                return
            if inflight.job.status == "delayed":
                series.retried.inc()
            else:
                series.dead.inc()

    def rescued(self, count: int) -> None:
        if count:
            self._rescues.inc(count)

    # -- the HTTP endpoint ---------------------------------------------------------------

    def serve(self, port: int, *, addr: str = "127.0.0.1") -> int:
        """Serve ``/metrics`` on ``addr:port`` from a daemon thread; the port bound
        (``port`` 0 picks a free one)."""
        try:
            server, _thread = _client().start_http_server(port, addr=addr, registry=self.registry)
        except OSError as exc:
            raise ConfigurationError(f"--metrics-port {port}: cannot listen on {addr}:{port}: {exc}") from exc
        self._server = server
        bound = int(server.server_port)
        logger.info("worker metrics on http://%s:%d/metrics", addr, bound, extra={"action": "worker.metrics_serving"})
        return bound

    def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
