"""Giving held attempts their slots: pass a rate-limited queue's start gate
(start_gate.py), open each attempt's run, then run a sync handler in its queue's slot
thread or hand an ``async def`` one to the event loop."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ..clock import now_ms
from ..queues.runs import describe_error, new_run
from .buffer import QueueBuffer
from .executor import Executor
from .inflight import Inflight, Outcome
from .start_gate import admit, gated_rate
from .state import WorkerState

logger = logging.getLogger(__name__)


class Slots:
    """``started`` hands newly opened runs to the run writer; ``settle`` takes every outcome."""

    def __init__(self, state: WorkerState, executor: Executor, *, started: Callable[[list[Inflight]], None],
                 settle: Callable[[Outcome], None]) -> None:
        self.state = state
        self.executor = executor
        self._started = started
        self._settle = settle

    def slot_loop(self, buffer: QueueBuffer) -> None:
        """One handler slot of a sync queue: take the next held job, run it here, repeat.
        Spare slots only cover handlers abandoned after a timeout."""
        state = self.state
        while True:
            with state.lock:
                taken = None
                while not state.stopping.is_set() and (taken := buffer.take()) is None:
                    buffer.work.wait(0.5)
                if state.stopping.is_set() or taken is None:
                    return
            try:
                for inflight in self.start([taken]):
                    self.executor.run_sync(inflight)
            except Exception as exc:  # the attempt fails, the slot goes on
                logger.exception("the worker failed running %s/%s", buffer.name, taken.job.id,
                                 extra={"action": "worker.slot_failed"})
                self._settle(Outcome(taken, "failed", error=describe_error(exc)))
            if taken.abandoned:  # timed out or lost meanwhile: a new thread has the slot
                return

    def dispatch(self, buffer: QueueBuffer) -> None:
        """Start held jobs of an ``async def`` queue in its free slots."""
        starting: list[Inflight] = []
        with self.state.lock:
            while not self.state.stopping.is_set() and (taken := buffer.take()) is not None:
                starting.append(taken)
        if not starting:
            return
        rate = gated_rate(starting)
        if rate is None:
            self._start_async(buffer, starting)
            return
        # The gate is a round trip and may wait: never on the event loop or the claim
        # loop that call here. Each group of at most n starts runs as soon as it passes.
        groups = [starting[i:i + rate[0]] for i in range(0, len(starting), rate[0])]
        threading.Thread(target=self._start_groups, args=(buffer, groups), name=f"oqron-gate-{buffer.name}",
                         daemon=True).start()

    def _start_groups(self, buffer: QueueBuffer, groups: list[list[Inflight]]) -> None:
        for group in groups:
            self._start_async(buffer, group)

    def _start_async(self, buffer: QueueBuffer, starting: list[Inflight]) -> None:
        try:
            runnable = self.start(starting)
        except Exception as exc:  # these attempts fail; the queue goes on
            logger.exception("the worker failed starting %d job(s) of %s", len(starting), buffer.name,
                             extra={"action": "worker.start_failed"})
            for inflight in starting:
                self._settle(Outcome(inflight, "failed", error=describe_error(exc)))
            return
        for inflight in runnable:
            self.executor.submit_async(inflight)

    def start(self, inflights: list[Inflight]) -> list[Inflight]:
        """Open the runs of attempts just given a slot (here, or a batch's call slot); the
        ones to run (a job cancelled while held is recorded as cancelled and not run).
        A rate-limited queue's attempts first pass its start gate (at most n at once: a
        batch is declared no larger), whose time their runs start at; a stop while they
        wait gives them back uncounted."""
        limits = inflights[0].queue.limits if inflights else None  # gated_rate, inlined: once per job
        rate = None if limits is None else limits.rate
        if rate is None:
            now = now_ms()
        else:
            passed = admit(self.state, inflights, rate)
            if passed is None:
                for inflight in inflights:
                    self._settle(Outcome(inflight, "interrupted"))
                return []
            now = passed
            inflights = [i for i in inflights if not i.settled]  # a lease lost while waiting: nothing to open
        for inflight in inflights:
            self._begin(inflight, now)
        self._started(inflights)
        if self.state.metrics is not None:
            self.state.metrics.started(inflights)
        runnable = []
        for inflight in inflights:
            if inflight.cancelled:
                self._settle(Outcome(inflight, "cancelled"))
            else:
                runnable.append(inflight)
                self.state.hook(inflight, "started")
        return runnable

    def _begin(self, inflight: Inflight, now: int) -> None:
        """Open the attempt's run record and start its clocks."""
        job, queue, config = inflight.job, inflight.queue, self.state.config
        job.started_at = job.updated_at = now
        extra = queue.run_fields(job) if queue.run_fields is not None else None
        if job.group:  # the board links a group member's runs to its group page
            extra = {**(extra or {}), "groupId": job.group}
        if job.replay_of:  # the replay set's page pairs this run with the original
            extra = {**(extra or {}), "replayOf": job.replay_of, "replaySet": job.replay_set}
        run = new_run(
            name=queue.name, module=queue.module, trigger=queue.trigger, input=job.data, attempts=job.attempts,
            app=config.project, environment=config.environment, worker_id=self.state.worker_id,
            job_id=job.id, correlation_id=job.correlation_id, caused_by=job.caused_by, started_at=now,
            # the metrics history's wait time: from enqueued (or due) to started
            wait_ms=max(now - max(job.created_at, job.run_at or 0), 0) if job.created_at else None, extra=extra,
        )
        job.run_id = run["id"]
        with inflight.lock:
            inflight.run = run
            inflight.overlay_dirty = True
        inflight.began = time.monotonic()
        inflight.deadline = inflight.began + job.timeout_ms / 1000 if job.timeout_ms else None
