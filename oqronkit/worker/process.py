"""One worker process: per queue a buffer, a claim loop (consumer.py) and handler slots
(slots.py); one finisher, one heartbeat, and (under leader election) the
scheduler-side services. This module wires them together and runs the lifecycle:
start, the drain at the stop, and the exit status."""

from __future__ import annotations

import functools
import logging
import os
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import lifecycle
from ..clock import now_ms
from ..errors import ConfigurationError, OqronError
from ..history.deploys import record_deploy_quietly
from ..live import WorkerInfo, forget_worker
from ..reachable import until_reachable
from ..services import Services
from .batch_buffer import BatchBuffer
from .batching import BatchSlots
from .buffer import QueueBuffer
from .consumer import Consumer
from .context import JobContext
from .executor import Executor
from .finisher import Finisher
from .heartbeat import Heartbeat
from .inflight import Inflight, Outcome
from .queue_definitions import publish_queue_definitions
from .slots import Slots
from .state import WorkerState
from .supervisor import Supervisor

if TYPE_CHECKING:
    from ..engine import Engine
    from ..queues.queue import Queue
    from ..telemetry.worker_metrics import WorkerMetrics
    from ..topics.dispatch import Dispatcher

logger = logging.getLogger(__name__)
#: Slot threads beyond the concurrency (idle unless a slot is being handed over).
SPARE_SLOTS = 1


class WorkerProcess:
    """Runs the handlers of ``queues`` (default: every declared queue with a handler).
    ``topic_poll_interval``: how soon an idle topic dispatcher looks for messages whose
    wake on publish did not reach it (or on a hot plane that cannot broadcast); None: the
    dispatcher's own ``IDLE_WAIT``."""

    def __init__(self, engine: Engine, *, queues: list[str] | None = None, concurrency: int | None = None,
                 burst: bool = False, record_runs: bool = True, services: bool = True, poll_interval: float = 1.0,
                 drain_timeout: float = 30.0, metrics: WorkerMetrics | None = None,
                 topic_poll_interval: float | None = None) -> None:
        self.engine = engine
        self.config = engine.config
        self.queues = _handled_queues(engine, queues)
        self.concurrency = {q.name: concurrency or q.concurrency for q in self.queues}
        self.burst = burst
        self.record_runs = record_runs
        self.run_services = services
        self.drain_timeout = drain_timeout
        self.topic_poll_interval = topic_poll_interval
        self.state = WorkerState(engine, record_runs=record_runs, burst=burst, poll_interval=poll_interval)
        self.state.metrics = metrics
        self.worker_id = self.state.worker_id
        self.started_at = now_ms()
        self.buffers = {q.name: (BatchBuffer if q.batch else QueueBuffer)(
            q, concurrency=self.concurrency[q.name], lock=self.state.lock) for q in self.queues}
        self._drained = threading.Condition(self.state.lock)
        self._finisher_stop = threading.Event()
        self._stopped = threading.Event()
        self.finisher = Finisher(self.state, forget=self.forget, has_inflight=self.has_inflight,
                                 on_batch=self.settled_batch)
        self.executor = Executor(on_outcome=self.settle, make_ctx=lambda inflight: JobContext(inflight, self.state))
        self.slots = Slots(self.state, self.executor, started=self.finisher.started, settle=self.settle)
        self.batch_slots = BatchSlots(self.state, self.slots, settle=self.settle)
        self.heartbeat = Heartbeat(self.state, self.finisher, queues=self.queues, inflights=self.all_inflight,
                                   settle=self.settle, worker_info=self.worker_info)
        self.supervisor = Supervisor(on_fatal=self.fail)
        self.services: Services | None = None
        self.dispatcher: Dispatcher | None = None
        self.last_settled = 0.0  # monotonic time the last outcome was settled and forgotten
        # What run() ends with (the command line's exit status): 1 once a thread kept
        # failing or outcomes were left unrecorded in the durable plane at the stop.
        self.exit_code = 0

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        # Both planes opened now, so errors surface at start (after a backend's restart).
        until_reachable(self.engine.config.backend_wait, lambda: self.engine.durable)
        until_reachable(self.engine.config.backend_wait, lambda: self.engine.hot)
        self.state.paused |= publish_queue_definitions(
            self.engine.durable, {q.name: (q, self.concurrency[q.name]) for q in self.queues})
        record_deploy_quietly(self.engine.durable, self.engine.config.version, worker=self.worker_id)
        self._spawn("oqron-finisher", self.finisher.loop, self._finisher_stop)
        self._spawn("oqron-heartbeat", self.heartbeat.loop, self._stopped)
        self._spawn("oqron-control", self.heartbeat.control_loop, self._stopped)
        for buffer in self.buffers.values():
            consumer = Consumer(self.state, buffer, on_held=functools.partial(self.slots.dispatch, buffer),
                                finisher_tokens=self.finisher.known_tokens)
            self._spawn(f"oqron-consume-{buffer.name}", consumer.loop)
            if not buffer.queue.is_async:
                # A few spare slots take over from handlers still stuck after a timeout.
                for n in range(buffer.concurrency + SPARE_SLOTS):
                    self._spawn(f"oqron-slot-{buffer.name}-{n}", self._slot_loop(buffer), buffer)
        self._start_topics()
        if self.run_services:
            self.services = Services(self.engine, worker_id=self.worker_id)
            self.services.on_rescued = metrics.rescued if (metrics := self.state.metrics) is not None else None
            self._spawn("oqron-services", self.services.loop, self._stopped)
        logger.info("worker %s started: %s", self.worker_id,
                    ", ".join(f"{q.name}x{self.concurrency[q.name]}" for q in self.queues) or "no queues",
                    extra={"action": "worker.start"})

    def _start_topics(self) -> None:
        """The topic dispatcher, when a queue here delivers a topic's subscription."""
        declared = sys.modules.get("oqronkit.topics.subscription")
        if declared is None:  # subscribing imports that module: a process without it declared none
            return
        from ..topics.dispatch import IDLE_WAIT, Dispatcher

        by_queue = declared.subscriptions_for(self.engine.registry)
        subscriptions = [s for q in self.queues if (s := by_queue.get(q.name))]
        if subscriptions:
            idle_wait = IDLE_WAIT if self.topic_poll_interval is None else self.topic_poll_interval
            self.dispatcher = Dispatcher(self.engine, subscriptions, self.worker_id, idle_wait=idle_wait)
            self._spawn("oqron-topics", self.dispatcher.loop, self.state.stopping)

    def _slot_loop(self, buffer: QueueBuffer) -> Callable[..., None]:
        return self.batch_slots.slot_loop if isinstance(buffer, BatchBuffer) else self.slots.slot_loop

    def _spawn(self, name: str, target: Callable[..., None], *args: object) -> None:
        self.supervisor.spawn(name, target, *args)

    def fail(self, reason: str) -> None:
        """Stop with a non-zero exit status: this process cannot go on as it should."""
        logger.critical("worker %s is stopping: %s", self.worker_id, reason, extra={"action": "worker.fatal"})
        self.exit_code = 1
        self.request_stop()

    def run(self) -> None:
        """Start, then block until :meth:`request_stop` (or, in burst mode, until no
        job is ready or running), then drain."""
        self.start()
        try:
            while not self.state.stopping.wait(0.1):
                if self.burst and self._burst_done():
                    break
        finally:
            self.stop()

    def _burst_done(self) -> bool:
        """No job ready or running, and none still to come from this process: every
        queue's last empty claim came after the last settled outcome (which may have added
        jobs elsewhere: a group's callback, a dependent, a retry) and after the topics'
        dispatcher last handed messages over, and the dispatcher had a quiet pass since."""
        if not all(b.idle for b in self.buffers.values()) or self.has_inflight():
            return False
        dispatcher = self.dispatcher
        if dispatcher is not None and not dispatcher.quiet_since_move():
            return False
        latest = max(self.last_settled, dispatcher.last_move if dispatcher is not None else 0.0)
        return all(b.idle_at > latest for b in self.buffers.values())

    def request_stop(self) -> None:
        self.state.stopping.set()
        with self.state.lock:
            self._drained.notify_all()
            for buffer in self.buffers.values():
                buffer.wake_all()

    def stop(self, drain_timeout: float | None = None) -> None:
        """Stop claiming, let running jobs finish up to ``drain_timeout``, return the
        rest to their queues uncounted, flush runs, and release everything."""
        self.request_stop()
        self._return_held()
        deadline = time.monotonic() + (self.drain_timeout if drain_timeout is None else drain_timeout)
        self._drain(deadline)
        self._stop_finisher(deadline)
        lifecycle.drain(max(deadline - time.monotonic(), 0) + 5)  # callbacks of settled jobs run before exit
        self._report_unrecorded()
        self._stopped.set()
        for thread in self.supervisor.threads:
            # Slot threads still inside a handler were interrupted: never wait for them.
            if not thread.name.startswith("oqron-slot-"):
                thread.join(timeout=5)
        if self.services is not None:
            self.services.resign()
        try:
            forget_worker(self.engine.hot, self.worker_id)
        except OqronError:
            pass
        self.executor.shutdown()
        logger.info("worker %s stopped (%s)", self.worker_id, self.stats_snapshot(), extra={"action": "worker.stop"})

    def _drain(self, deadline: float) -> None:
        """Wait for running handlers until ``deadline``, then interrupt the rest; and
        for claims in flight, which give their jobs back themselves."""
        with self.state.lock:
            while self.has_inflight() and time.monotonic() < deadline:
                self._drained.wait(0.05)  # polls: forgetting an attempt does not notify
        for inflight in self.all_inflight():
            inflight.request_cancel("shutdown")
            self.settle(Outcome(inflight, "interrupted"))
        for thread in self.supervisor.threads:
            if thread.name.startswith("oqron-consume-"):
                thread.join(timeout=max(deadline - time.monotonic(), 0) + 1)

    def _stop_finisher(self, deadline: float) -> None:
        # Writes held by an outage get until the drain deadline (and one more try) to land.
        self.finisher.retry_until = deadline
        self._finisher_stop.set()
        for thread in self.supervisor.threads:
            if thread.name == "oqron-finisher":
                thread.join(timeout=max(deadline - time.monotonic(), 0) + 30)
                if thread.is_alive():
                    self.fail("the finisher did not finish settling")

    def _report_unrecorded(self) -> None:
        unrecorded = self.finisher.unrecorded()
        if unrecorded:
            logger.error("worker %s stops with %d outcome(s) not recorded in the durable plane: their jobs run "
                         "again once their leases lapse", self.worker_id, unrecorded,
                         extra={"action": "worker.unrecorded"})
            self.state.count("unrecorded", unrecorded)
            self.exit_code = 1

    def _return_held(self) -> None:
        """Give back jobs claimed ahead but never started (their attempt is not counted)."""
        with self.state.lock:
            held = [i for buffer in self.buffers.values() for i in buffer.take_all_held()]
        for inflight in held:
            self.settle(Outcome(inflight, "interrupted"))

    # -- what the parts call back ---------------------------------------------------------

    def settle(self, outcome: Outcome) -> None:
        """Accept the first outcome of an attempt (later ones are dropped), free its
        slot and start the next held job in it."""
        inflight = outcome.inflight
        if not inflight.settle():
            return
        if self.state.metrics is not None:
            self.state.metrics.outcome(outcome)
        buffer = self.buffers[inflight.job.queue]
        queue = buffer.queue
        if inflight.started and not queue.is_async and outcome.kind in ("timeout", "lost"):
            # Its handler still occupies a slot thread: that thread retires when the
            # handler returns, and a fresh one takes the slot now.
            inflight.abandoned = True
            # A batch hands its slot on once, whichever of its jobs timed out first.
            if not self.stopping and (not isinstance(buffer, BatchBuffer)
                                      or self.batch_slots.abandoned(buffer, inflight)):
                self._spawn(f"oqron-slot-{queue.name}-r", self._slot_loop(buffer), buffer)
        if inflight.run is not None:  # its handler started (not only its slot: a start gate may hold it)
            buffer.prefetch.observe(time.monotonic() - inflight.began)
        with self.state.lock:
            buffer.settled(inflight)
        self.finisher.submit(outcome)
        if inflight.started and queue.is_async:
            self.slots.dispatch(buffer)

    def forget(self, inflights: list[Inflight]) -> None:
        with self.state.lock:
            for inflight in inflights:
                self.buffers[inflight.job.queue].forget(inflight)
            self.last_settled = time.monotonic()

    def settled_batch(self) -> None:
        """The finisher wrote a batch: the settle backlog shrank, so claiming may resume."""
        with self.state.lock:
            for buffer in self.buffers.values():
                buffer.room.notify()

    def has_inflight(self) -> bool:
        return any(buffer.inflight for buffer in self.buffers.values())

    def all_inflight(self) -> list[Inflight]:
        with self.state.lock:
            return [i for buffer in self.buffers.values() for i in buffer.inflight.values()]

    def worker_info(self) -> WorkerInfo:
        return {
            "id": self.worker_id, "host": socket.gethostname(), "pid": os.getpid(),
            "queues": {q.name: self.concurrency[q.name] for q in self.queues},
            "inflight": sum(len(b.inflight) for b in self.buffers.values()), "startedAt": self.started_at,
            "lastClaimAt": self.state.last_claim_at, "hotOk": self.state.hot_ok, "stats": self.stats_snapshot(),
            "heartbeatAt": now_ms(), "paused": sorted(self.state.paused),
        }

    # -- what callers read --------------------------------------------------------------

    @property
    def stopping(self) -> bool:
        return self.state.stopping.is_set()

    @property
    def stats(self) -> Counter[str]:
        return self.state.stats

    @property
    def paused(self) -> set[str]:
        return self.state.paused

    @property
    def hot_ok(self) -> bool:
        return self.state.hot_ok

    def count(self, stat: str, n: int = 1) -> None:
        self.state.count(stat, n)

    def stats_snapshot(self) -> dict[str, int]:
        return self.state.stats_snapshot()


def _handled_queues(engine: Engine, names: list[str] | None) -> list[Queue]:
    """The queues to consume, each with a handler in this process."""
    names = names or sorted(n for n, q in engine.registry.queues.items() if q.fn is not None)
    queues = []
    for name in names:
        queue = engine.get_queue(name)
        if queue.fn is None:
            raise ConfigurationError(
                f"Queue {name!r} has no handler in this process: give it one with @queue.handler "
                "or oqronkit.worker(name, handler), or leave it out of --queues."
            )
        queues.append(queue)
    return queues
