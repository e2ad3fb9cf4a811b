"""One worker process: a claim loop per queue, a pool of handler threads, a finisher,
a heartbeat, and (under leader election) the scheduler-side services."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections import Counter, deque
from typing import TYPE_CHECKING, Any

from ..backends.hot_types import Lease, Signal
from ..clock import now_ms
from ..errors import ConfigurationError, OqronError
from ..jobs import Job
from ..live import WorkerInfo, forget_worker
from ..namespaces import QUEUE, WORKER
from ..runs import describe_error, new_run
from .context import JobContext
from .executor import Executor
from .finisher import Finisher
from .heartbeat import Heartbeat
from .inflight import Inflight, Outcome
from .prefetch import Prefetch
from .supervisor import Supervisor

if TYPE_CHECKING:
    from ..engine import Engine
    from ..queue import Queue

logger = logging.getLogger(__name__)
#: Most jobs one claim takes (half the largest prefetch of the default concurrency:
#: see prefetch.MAX_PER_SLOT). One round trip to each plane feeds them all.
CLAIM_BATCH = 150
#: How far claiming may run ahead of the finisher: finished attempts waiting to be
#: settled, per unit of concurrency, and at least SETTLE_BACKLOG_FLOOR in all.
#: The finisher's cost is per batch, so fast jobs need room for big batches (figures: bench/README.md).
#: A crash re-runs at most this many finished-but-unsettled jobs.
SETTLE_BACKLOG = 8
SETTLE_BACKLOG_FLOOR = 200
#: Slot threads beyond the concurrency (idle unless a slot is being handed over).
SPARE_SLOTS = 1


class WorkerProcess:
    """Runs the handlers of ``queues`` (default: every declared queue with a handler)."""

    def __init__(
        self,
        engine: Engine,
        *,
        queues: list[str] | None = None,
        concurrency: int | None = None,
        burst: bool = False,
        record_runs: bool = True,
        services: bool = True,
        poll_interval: float = 1.0,
        drain_timeout: float = 30.0,
    ) -> None:
        self.engine = engine
        self.config = engine.config
        names = queues or sorted(n for n, q in engine.registry.queues.items() if q.fn is not None)
        self.queues: list[Queue] = []
        for name in names:
            queue = engine.get_queue(name)
            if queue.fn is None:
                raise ConfigurationError(
                    f"Queue {name!r} has no handler in this process: give it one with @queue.handler "
                    "or oqronkit.worker(name, handler), or leave it out of --queues."
                )
            self.queues.append(queue)
        self.concurrency = {q.name: concurrency or q.concurrency for q in self.queues}
        # Throttled queues claim only what they may start: the window counts dispatches.
        # Held jobs keep their leases renewed; a crash counts them as stalled, like jobs
        # that had just started (see README "Prefetch").
        self.prefetch = {
            q.name: Prefetch(concurrency=self.concurrency[q.name], fixed=0 if q.throttle is not None else q.prefetch)
            for q in self.queues
        }
        self.burst = burst
        self.record_runs = record_runs
        self.run_services = services
        self.poll_interval = poll_interval
        self.drain_timeout = drain_timeout
        self.worker_id = engine.node_id
        self.stats: Counter[str] = Counter()
        self.paused: set[str] = set()
        self.started_at = now_ms()
        self.last_claim_at: int | None = None
        self.hot_ok = True
        self._inflight: dict[str, dict[str, Inflight]] = {q.name: {} for q in self.queues}
        # Handlers running now, per queue: a slot frees when its attempt settles, while
        # the finisher writes the outcome behind (bounded by SETTLE_BACKLOG).
        self._running: dict[str, int] = {q.name: 0 for q in self.queues}
        # Claimed but not started yet (prefetched), in claim order.
        self._held: dict[str, deque[Inflight]] = {q.name: deque() for q in self.queues}
        # A bare RLock: ``with`` on it runs in C, where a Condition adds two Python calls,
        # and the engine takes it several times per job.
        self._lock = threading.RLock()
        self._drained = threading.Condition(self._lock)
        # Per queue, on the same lock: slots wait for held jobs, the claim loop for room.
        self._work = {q.name: threading.Condition(self._lock) for q in self.queues}
        self._room = {q.name: threading.Condition(self._lock) for q in self.queues}
        self._stopping = threading.Event()
        self._finisher_stop = threading.Event()
        self._stopped = threading.Event()
        self._idle: set[str] = set()
        self._throttle: dict[str, list[float]] = {q.name: [] for q in self.queues}
        self._stats_lock = threading.Lock()
        self.finisher = Finisher(self)
        self.executor = Executor(on_outcome=self.settle, make_ctx=lambda inflight: JobContext(inflight, self))
        self.heartbeat = Heartbeat(self)
        self.supervisor = Supervisor(on_fatal=self.fail)
        self._threads = self.supervisor.threads
        self.services: Any = None
        # What run() ends with (the command line's exit status): 1 once a thread kept
        # failing or outcomes were left unrecorded in the durable plane at the stop.
        self.exit_code = 0

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        self.engine.durable  # noqa: B018 - open both planes now, so errors surface at start
        self.engine.hot  # noqa: B018
        self._publish_control()
        self._spawn("oqron-finisher", self.finisher.loop, self._finisher_stop)
        self._spawn("oqron-heartbeat", self.heartbeat.loop, self._stopped)
        self._spawn("oqron-control", self.heartbeat.control_loop, self._stopped)
        for queue in self.queues:
            self._spawn(f"oqron-consume-{queue.name}", self._consume, queue)
            if not queue.is_async:
                # A few spare slots take over from handlers still stuck after a timeout.
                for n in range(self.concurrency[queue.name] + SPARE_SLOTS):
                    self._spawn(f"oqron-slot-{queue.name}-{n}", self._slot, queue)
        if self.run_services:
            from ..services import Services

            self.services = Services(self.engine, worker_id=self.worker_id)
            self._spawn("oqron-services", self.services.loop, self._stopped)
        logger.info("worker %s started: %s", self.worker_id,
                    ", ".join(f"{q.name}x{self.concurrency[q.name]}" for q in self.queues) or "no queues",
                    extra={"action": "worker.start"})

    def _spawn(self, name: str, target: Any, *args: Any) -> None:
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
            while not self._stopping.wait(0.1):
                if self.burst and self._idle >= {q.name for q in self.queues} and not self.has_inflight():
                    break
        finally:
            self.stop()

    def request_stop(self) -> None:
        self._stopping.set()
        with self._lock:
            self._drained.notify_all()
            for condition in (*self._work.values(), *self._room.values()):
                condition.notify_all()

    def stop(self, drain_timeout: float | None = None) -> None:
        """Stop claiming, let running jobs finish up to ``drain_timeout``, return the
        rest to their queues uncounted, flush runs, and release everything."""
        self.request_stop()
        self._return_held()
        deadline = time.monotonic() + (self.drain_timeout if drain_timeout is None else drain_timeout)
        with self._lock:
            while self.has_inflight() and time.monotonic() < deadline:
                self._drained.wait(0.05)  # polls: forgetting an attempt does not notify
        for inflight in self.all_inflight():
            inflight.request_cancel("shutdown")
            self.settle(Outcome(inflight, "interrupted"))
        # A claim in flight gives its jobs back itself (_hold_jobs): wait for it to land.
        for thread in self._threads:
            if thread.name.startswith("oqron-consume-"):
                thread.join(timeout=max(deadline - time.monotonic(), 0) + 1)
        # Writes held by an outage get until the drain deadline (and one more try) to land.
        self.finisher.retry_until = deadline
        self._finisher_stop.set()
        for thread in self._threads:
            if thread.name == "oqron-finisher":
                thread.join(timeout=max(deadline - time.monotonic(), 0) + 30)
                if thread.is_alive():
                    self.fail("the finisher did not finish settling")
        unrecorded = self.finisher.unrecorded()
        if unrecorded:
            logger.error("worker %s stops with %d outcome(s) not recorded in the durable plane: their jobs run "
                         "again once their leases lapse", self.worker_id, unrecorded,
                         extra={"action": "worker.unrecorded"})
            self.count("unrecorded", unrecorded)
            self.exit_code = 1
        self._stopped.set()
        for thread in self._threads:
            # Slot threads still inside a handler were interrupted above: never wait for them.
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

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def _return_held(self) -> None:
        """Give back jobs claimed ahead but never started (their attempt is not counted)."""
        with self._lock:
            held = [i for group in self._held.values() for i in group]
            for group in self._held.values():
                group.clear()
        for inflight in held:
            self.settle(Outcome(inflight, "interrupted"))

    # -- bookkeeping -----------------------------------------------------------------------

    def has_inflight(self) -> bool:
        return any(self._inflight.values())

    def all_inflight(self) -> list[Inflight]:
        with self._lock:
            return [i for group in self._inflight.values() for i in group.values()]

    def settle(self, outcome: Outcome) -> None:
        """Accept the first outcome of an attempt (later ones are dropped), free its
        slot and start the next held job in it."""
        inflight = outcome.inflight
        if inflight.settle():
            queue = inflight.queue
            if inflight.started and not queue.is_async and outcome.kind in ("timeout", "lost"):
                # Its handler still occupies a slot thread: that thread retires when the
                # handler returns, and a fresh one takes the slot now.
                inflight.abandoned = True
                if not self.stopping:
                    self._spawn(f"oqron-slot-{queue.name}-r", self._slot, queue)
            if inflight.started:
                self.prefetch[queue.name].observe(time.monotonic() - inflight.began)
            with self._lock:
                if inflight.started:
                    # A sync slot takes its next job itself; a replacement slot (above)
                    # starts looking at once.
                    self._running[queue.name] -= 1
                if len(self._held[queue.name]) <= self.prefetch[queue.name].size // 2:
                    self._room[queue.name].notify()
            self.finisher.submit(outcome)
            if inflight.started and queue.is_async:
                self._dispatch(queue)

    def count(self, stat: str, n: int = 1) -> None:
        """Add to a worker statistic (the heartbeat copies them from another thread)."""
        with self._stats_lock:
            self.stats[stat] += n

    def stats_snapshot(self) -> dict[str, int]:
        with self._stats_lock:
            return dict(self.stats)

    def forget(self, inflight: Inflight) -> None:
        with self._lock:
            group = self._inflight[inflight.job.queue]
            # A retried job can be claimed again before its previous attempt is settled:
            # forget only this attempt, never the newer one under the same job id.
            if group.get(inflight.job.id) is inflight:
                del group[inflight.job.id]

    def settled_batch(self) -> None:
        """The finisher wrote a batch: the settle backlog shrank, so claiming may resume."""
        with self._lock:
            for condition in self._room.values():
                condition.notify()

    def hook(self, inflight: Inflight, name: str, payload: Any) -> None:
        fn = inflight.queue.hooks.get(name)
        if fn is None:
            return
        try:
            fn(inflight.job, payload)
        except Exception:  # a hook must never break settling
            logger.exception("on_%s hook of queue %s failed", name, inflight.job.queue,
                             extra={"action": "queue.hook_failed"})

    # -- claiming ---------------------------------------------------------------------------

    def _free_slots(self, queue: Queue) -> int:
        """How many jobs to claim now: free slots plus room in the prefetch buffer,
        topped up once it is half empty (so claims come in batches)."""
        name = queue.name
        concurrency, prefetch = self.concurrency[name], self.prefetch[name].size
        held = len(self._held[name])
        if held > prefetch // 2:
            return 0
        free = concurrency + prefetch - self._running[name] - held
        # Don't run further ahead of the finisher than a few batches of outcomes.
        backlog = max(concurrency * SETTLE_BACKLOG, SETTLE_BACKLOG_FLOOR)
        free = min(free, backlog + concurrency + prefetch - len(self._inflight[name]))
        if queue.throttle is not None and free > 0:
            limit, window = queue.throttle
            now = time.monotonic()
            recent = [t for t in self._throttle[queue.name] if now - t < window]
            self._throttle[queue.name] = recent
            free = min(free, limit - len(recent))
        return max(free, 0)

    def _consume(self, queue: Queue) -> None:
        hot = self.engine.hot
        unread: list[Lease] = []  # claimed, but their jobs could not be read yet
        while not self._stopping.is_set():
            retrying = bool(unread)
            if retrying:
                leases, unread = unread, []
            else:
                if queue.name in self.paused:
                    self._idle.add(queue.name)
                    self._stopping.wait(0.25)
                    continue
                with self._lock:
                    free = self._free_slots(queue)
                    if free == 0:
                        self._room[queue.name].wait(0.05 if queue.throttle else 0.5)
                        continue
                try:
                    leases = hot.claim(queue.name, worker_id=self.worker_id, limit=min(free, CLAIM_BATCH),
                                       lease_ms=queue.lease_ms, now=now_ms())
                    self.hot_ok = True
                except OqronError as exc:
                    self._hot_down(exc)
                    continue
                if not leases:
                    if not self._inflight[queue.name]:
                        self._idle.add(queue.name)
                    if self.burst:
                        self._stopping.wait(0.05)
                        continue
                    self._wait_for_work(queue)
                    continue
                self._idle.discard(queue.name)
                self.last_claim_at = now_ms()
                if queue.throttle is not None:
                    self._throttle[queue.name].extend([time.monotonic()] * len(leases))
            try:
                self._hold_jobs(queue, leases)
            except OqronError as exc:
                unread = self._keep_unread(queue, leases, exc, log=not retrying)
        if unread:
            self._return_unread(queue, unread)

    def _keep_unread(self, queue: Queue, leases: list[Lease], exc: OqronError, *, log: bool) -> list[Lease]:
        """Claimed jobs that could not be read (an outage) or started: keep their leases,
        renewed, and read them again. Left to lapse, each cost its job a stall."""
        if log:
            logger.error("could not start %d job(s) of %s; their leases are kept and the start retried: %s",
                         len(leases), queue.name, exc, extra={"action": "worker.start_failed"})
        self._stopping.wait(min(1.0, queue.lease_ms / 3000))
        try:
            kept = self.engine.hot.extend(queue.name, leases, lease_ms=queue.lease_ms, now=now_ms())
        except OqronError:
            kept = leases  # no answer: the retry's _still_leased asks again before any start
        return kept

    def _return_unread(self, queue: Queue, leases: list[Lease]) -> None:
        """At the stop: give back claimed jobs never read, as ready and uncounted."""
        engine, now = self.engine, now_ms()
        try:
            records = {r.id: r for r in engine.durable.get_many(queue.namespace, [le.job_id for le in leases])}
            for lease in leases:
                record = records.get(lease.job_id)
                if record is None:
                    engine.hot.ack(queue.name, [lease])
                    continue
                job = Job.from_value(record.value)
                engine.hot.release(queue.name, lease, Signal(job.id, job.priority, None, job.lifo), now)
        except OqronError as exc:
            logger.warning("could not give back %d claimed job(s) of %s; their leases lapse: %s", len(leases),
                           queue.name, exc, extra={"action": "worker.return_failed"})
            return
        self.count("returned", len(leases))

    def _wait_for_work(self, queue: Queue) -> None:
        timeout = self.poll_interval
        try:
            due = self.engine.hot.next_due(queue.name)
            if due is not None:
                timeout = min(timeout, max((due - now_ms()) / 1000, 0.001))
            self.engine.hot.wait([queue.name], timeout)
        except OqronError as exc:
            self._hot_down(exc)

    def _hot_down(self, exc: Exception) -> None:
        if self.hot_ok:
            logger.error("hot plane unreachable; claiming paused until it answers: %s", exc,
                         extra={"action": "worker.hot_down"})
        self.hot_ok = False
        self._stopping.wait(1.0)

    def _hold_jobs(self, queue: Queue, leases: list[Lease]) -> None:
        """Read the claimed jobs, keep them as held attempts, and start as many as
        there are free slots."""
        engine = self.engine
        records = {r.id: r for r in engine.durable.get_many(queue.namespace, [le.job_id for le in leases])}
        gone = [le for le in leases if le.job_id not in records]
        if gone:  # deleted or cancelled while signalled: nothing to run
            engine.hot.ack(queue.name, gone)
        held: list[Inflight] = []
        for lease in leases:
            record = records.get(lease.job_id)
            if record is None:
                continue
            job = Job.from_value(record.value)
            job.attempts += 1
            job.status, job.lease_token, job.worker_id = "active", lease.token, self.worker_id
            held.append(Inflight(job=job, lease=lease, run=None, queue=queue, deadline=None))
        if not held:
            return
        # A slow durable read may have outlived the lease: never start a job another
        # worker may hold now. The active state is written behind by the finisher.
        held = self._still_leased(queue, held)
        if not held:
            return
        with self._lock:
            # A claim that lands once the stop has begun (after _return_held) is given
            # back here: nobody would run or return it, and its lease would lapse into a stall.
            stopping = self.stopping
            if not stopping:
                for inflight in held:
                    self._inflight[queue.name][inflight.job.id] = inflight
                self._held[queue.name].extend(held)
                if not queue.is_async:
                    self._work[queue.name].notify(len(held))
        if stopping:
            self._give_back_unstarted(queue, held)
        elif queue.is_async:
            self._dispatch(queue)

    def _give_back_unstarted(self, queue: Queue, held: list[Inflight]) -> None:
        """Release the leases of jobs claimed but never started: their durable rows were
        never touched, so the attempt is not counted."""
        hot, now = self.engine.hot, now_ms()
        for inflight in held:
            job = inflight.job
            hot.release(queue.name, inflight.lease, Signal(job.id, job.priority, None, job.lifo), now)
        self.count("returned", len(held))

    def _take(self, queue: Queue) -> Inflight | None:
        """Under the lock: the next held job, given a slot, or None when no slot is free
        (``_running`` never exceeds the queue's concurrency) or nothing is held."""
        name, held = queue.name, self._held[queue.name]
        while held and held[0].settled:  # its lease was lost while held
            held.popleft()
        if not held or self._running[name] >= self.concurrency[name]:
            return None
        inflight = held.popleft()
        inflight.started = True
        self._running[name] += 1
        if len(held) <= self.prefetch[name].size // 2:
            self._room[name].notify()
        return inflight

    def _start(self, inflights: list[Inflight]) -> list[Inflight]:
        """Open the runs of attempts just given a slot; the ones to run (a job
        cancelled while held is recorded as cancelled and not run)."""
        now = now_ms()
        for inflight in inflights:
            self._begin(inflight, now)
        self.finisher.started(inflights)
        runnable = []
        for inflight in inflights:
            if inflight.cancelled.is_set():
                self.settle(Outcome(inflight, "cancelled"))
            else:
                runnable.append(inflight)
        return runnable

    def _slot(self, queue: Queue) -> None:
        """One handler slot of a sync queue: take the next held job, run it here, repeat.
        Spare slots only cover handlers abandoned after a timeout."""
        work = self._work[queue.name]
        while True:
            with self._lock:
                while not self.stopping and (taken := self._take(queue)) is None:
                    work.wait(0.5)
                if self.stopping:
                    return
            try:
                for inflight in self._start([taken]):
                    self.executor.run_sync(inflight)
            except Exception as exc:  # the attempt fails, the slot goes on
                logger.exception("the worker failed running %s/%s", queue.name, taken.job.id,
                                 extra={"action": "worker.slot_failed"})
                self.settle(Outcome(taken, "failed", error=describe_error(exc)))
            if taken.abandoned:  # timed out or lost meanwhile: a new thread has the slot
                return

    def _dispatch(self, queue: Queue) -> None:
        """Start held jobs of an ``async def`` queue in its free slots."""
        starting: list[Inflight] = []
        with self._lock:
            while not self.stopping and (taken := self._take(queue)) is not None:
                starting.append(taken)
        if starting:
            try:
                runnable = self._start(starting)
            except Exception as exc:  # these attempts fail; the queue goes on
                logger.exception("the worker failed starting %d job(s) of %s", len(starting), queue.name,
                                 extra={"action": "worker.start_failed"})
                for inflight in starting:
                    self.settle(Outcome(inflight, "failed", error=describe_error(exc)))
                return
            for inflight in runnable:
                self.executor.submit_async(inflight)

    def _begin(self, inflight: Inflight, now: int) -> None:
        """Open the attempt's run record and start its clocks."""
        job, queue = inflight.job, inflight.queue
        job.started_at = job.updated_at = now
        run = new_run(
            name=queue.name, module=queue.module, trigger="queue", input=job.data, attempts=job.attempts,
            app=self.config.project, environment=self.config.environment, worker_id=self.worker_id,
            job_id=job.id, correlation_id=job.correlation_id, started_at=now,
        )
        job.run_id = run["id"]
        with inflight.lock:
            inflight.run = run
            inflight.overlay_dirty = True
        inflight.began = time.monotonic()
        inflight.deadline = inflight.began + job.timeout_ms / 1000 if job.timeout_ms else None

    def _still_leased(self, queue: Queue, started: list[Inflight]) -> list[Inflight]:
        """The attempts whose lease is still ours, renewed if the durable reads and
        writes before them were slow.

        Between the claim and here the durable plane may have stalled (a Postgres
        restart blocks a pool checkout for up to its timeout). A lease can lapse
        meanwhile and the rescuer hand the job to another worker: starting it then
        would run it twice at the same time. So when more than a third of the lease has
        gone (the heartbeat's renewal period), renew first and start only the jobs
        whose lease was renewed. The others are left alone: the rescuer or the new
        holder owns them, and the durable state we just wrote is settled by the
        rescuer/reconciler (a stall) or overwritten by the new holder.
        """
        now = now_ms()
        if all(now - (i.lease.expires_at - queue.lease_ms) < queue.lease_ms / 3 for i in started):
            return started  # the usual case: no extra round trip
        kept = {le.job_id: le for le in self.engine.hot.extend(queue.name, [i.lease for i in started],
                                                               lease_ms=queue.lease_ms, now=now)}
        lost = [i for i in started if i.job.id not in kept]
        if lost:
            logger.warning("%d job(s) of %s lost their lease while the durable plane was slow; not starting them",
                           len(lost), queue.name, extra={"action": "worker.lease_lapsed_before_start"})
        for inflight in started:
            if inflight.job.id in kept:
                inflight.lease = kept[inflight.job.id]
        return [i for i in started if i.job.id in kept]

    def _publish_control(self) -> None:
        """Record each consumed queue's definition in the ``queue`` control namespace,
        keeping its persisted pause state."""
        durable = self.engine.durable
        existing = {r.id: r.value for r in durable.get_many(QUEUE, [q.name for q in self.queues])}
        from ..durable import RecordWrite

        writes = []
        for queue in self.queues:
            current = existing.get(queue.name, {})
            writes.append(RecordWrite(QUEUE, queue.name, {
                **current, "name": queue.name, "paused": bool(current.get("paused")),
                "strategy": queue.strategy, "concurrency": queue.concurrency, "retries": queue.retries,
                "deadLetter": queue.dead_letter, "handler": f"{queue.fn.__module__}.{queue.fn.__qualname__}",
                "updatedAt": now_ms(),
            }))
            if current.get("paused"):
                self.paused.add(queue.name)
            if queue.module == "worker":
                writes.append(RecordWrite(WORKER, queue.name, {
                    "name": queue.name, "queue": queue.name, "concurrency": self.concurrency[queue.name],
                    "handler": f"{queue.fn.__module__}.{queue.fn.__qualname__}", "updatedAt": now_ms(),
                }))
        durable.put_many(writes)

    def worker_info(self) -> WorkerInfo:
        return {
            "id": self.worker_id, "host": socket.gethostname(), "pid": os.getpid(),
            "queues": {q.name: self.concurrency[q.name] for q in self.queues},
            "inflight": sum(len(g) for g in self._inflight.values()), "startedAt": self.started_at,
            "lastClaimAt": self.last_claim_at, "hotOk": self.hot_ok, "stats": self.stats_snapshot(),
            "heartbeatAt": now_ms(), "paused": sorted(self.paused),
        }

