"""Running batch handlers: one call with a list of job contexts, one outcome per job.

The handler receives ``list[BatchJobContext]`` (each the usual ``ctx``, with ``fail``).
Per job, in this order of precedence:

- ``ctx.fail(error)`` was called: that job fails with ``error`` (an exception, whose
  kind counts as if raised: ``RetryAfter``, ``Discard``, ``Postpone``; or a message);
- the handler raised: the job fails with that exception (each retried per its own policy);
- the handler returned None: the job completes with no output; a list (one entry per
  context, in order) or a dict (job id: entry) gives each job its entry, and an entry
  that is an exception instance fails that job as ``ctx.fail`` would. Any other return
  value (a list of the wrong length, a dict naming a job not in the batch) fails the
  whole batch with a ``TypeError`` saying so.

Every job keeps its own lease (the heartbeat renews them all), run record (stamped
``batch: {id, size}``), timeout and cancel request; an ``async def`` handler runs to
completion on an event loop of its slot thread.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable
from typing import Any

from ..ids import new_id
from ..queues.gates import check_gates
from ..queues.runs import describe_error
from ..telemetry.tracing import end_consumer, start_batch
from .batch_buffer import BatchBuffer, RunningBatch
from .context import JobContext
from .executor import classify
from .inflight import Inflight, Outcome
from .slots import Slots
from .state import WorkerState

logger = logging.getLogger(__name__)


class BatchJobContext(JobContext):
    """A job's ``ctx`` inside a batch: ``fail(error)`` fails this job alone."""

    def __init__(self, inflight: Inflight, state: WorkerState) -> None:
        super().__init__(inflight, state)
        self.attempt_of = inflight  # the batch runner settles each context's attempt
        self.failure: BaseException | None = None

    def fail(self, error: BaseException | str) -> None:
        """Fail this job (retried or dead-lettered alone); the rest of the batch goes on."""
        self.failure = error if isinstance(error, BaseException) else RuntimeError(str(error))


class BatchSlots:
    """The slot threads of batch queues. ``slots`` opens runs (as for single jobs);
    ``settle`` takes every outcome."""

    def __init__(self, state: WorkerState, slots: Slots, *, settle: Callable[[Outcome], None]) -> None:
        self.state = state
        self.slots = slots
        self._settle = settle

    def slot_loop(self, buffer: BatchBuffer) -> None:
        """One call slot: wait for a batch (full, or its oldest job waited max_wait),
        run it here, repeat. Retires when a timeout or lost lease handed the slot on."""
        while True:
            batch = self._wait_for_batch(buffer)
            if batch is None:
                return
            try:
                self._run(buffer, batch)
            except Exception as exc:  # these attempts fail, the slot goes on
                logger.exception("the worker failed running a batch of %d job(s) of %s", len(batch.attempts),
                                 buffer.name, extra={"action": "worker.batch_failed"})
                for inflight in batch.attempts:
                    self._settle(Outcome(inflight, "failed", error=describe_error(exc)))
            finally:
                with self.state.lock:
                    buffer.end_call(batch)
            if batch.abandoned:
                return

    def abandoned(self, buffer: BatchBuffer, inflight: Inflight) -> bool:
        """An attempt of a running batch timed out or lost its lease: whether a new slot
        thread should take over (once per batch: the old one retires when the call returns)."""
        with self.state.lock:
            batch = buffer.running_batches.get(inflight)
            if batch is None or batch.abandoned:
                return False
            batch.abandoned = True
            return buffer.end_call(batch)

    def _wait_for_batch(self, buffer: BatchBuffer) -> RunningBatch | None:
        state = self.state
        with state.lock:
            while not state.stopping.is_set():
                ready = buffer.next_batch(time.monotonic())
                if ready is None:
                    buffer.work.wait(0.5)
                    continue
                take, key, wait = ready
                if take:
                    return buffer.take_batch(key, new_id())
                buffer.work.wait(max(wait, 0.001))
        return None

    def _run(self, buffer: BatchBuffer, batch: RunningBatch) -> None:
        if batch.broken:  # group_by raised for these: each failed alone, with a run as any attempt
            self.slots.start([inflight for inflight, _ in batch.broken])
            for inflight, error in batch.broken:
                self._settle(Outcome(inflight, "failed", error=error))
        if not batch.attempts:
            return
        runnable = [i for i in self.slots.start(batch.attempts) if not i.settled]
        if not runnable:
            return
        for inflight in runnable:
            with inflight.lock:
                assert inflight.run is not None
                inflight.run["batch"] = {"id": batch.id, "size": len(runnable)}
        contexts = self._gated([BatchJobContext(i, self.state) for i in runnable], buffer.queue.lifecycle)
        if not contexts:
            return
        fn = buffer.queue.fn
        assert fn is not None, "a worker consumes only queues with a handler"
        span, raised = start_batch(buffer.name, [c.attempt_of.job for c in contexts], batch.id), None
        try:
            if inspect.iscoroutinefunction(fn):
                import asyncio  # only for an async def batch handler (executor.py says why)

                result = asyncio.run(fn(contexts))
            else:
                result = fn(contexts)
        except BaseException as exc:
            outcomes, raised = [classify(c.attempt_of, exc=c.failure or exc) for c in contexts], exc
        else:
            outcomes = _spread(contexts, result)
        if span is not None:  # failed when any job failed: the span's status says the batch had a failure
            failed = next((o for o in outcomes if o.kind in ("failed", "timeout", "discarded")), None)
            end_consumer(span, failed.kind if failed else "completed",
                         failed.error["message"] if failed and failed.error else None, raised)
        for outcome in outcomes:
            self._settle(outcome)


    def _gated(self, contexts: list[BatchJobContext], hooks: Any) -> list[BatchJobContext]:
        """The jobs the queue's condition and before_run let through; each refused one is
        settled alone (a skip, or a failed attempt), as a single job's would be."""
        if hooks.condition is None and hooks.before_run is None:
            return contexts
        passed = []
        for ctx in contexts:
            try:
                check_gates(ctx, hooks.condition, hooks.before_run)
            except Exception as exc:
                self._settle(classify(ctx.attempt_of, exc=exc))
            else:
                passed.append(ctx)
        return passed


def _spread(contexts: list[BatchJobContext], result: Any) -> list[Outcome]:
    """One outcome per job from what the handler returned (see the module's docstring)."""
    entries: list[Any]
    if result is None:
        entries = [None] * len(contexts)
    elif isinstance(result, (list, tuple)) and len(result) == len(contexts):
        entries = list(result)
    elif isinstance(result, dict) and set(result) <= {c.job_id for c in contexts}:
        entries = [result.get(c.job_id) for c in contexts]
    else:
        shape = f"a {type(result).__name__} of {len(result)}" if isinstance(result, (list, tuple, dict)) \
            else f"a {type(result).__name__}"
        error = TypeError(f"a batch handler returns None, a list of one entry per job ({len(contexts)}) or a dict "
                          f"of entries by job id of the batch; it returned {shape}")
        return [classify(c.attempt_of, exc=c.failure or error) for c in contexts]
    outcomes = []
    for ctx, entry in zip(contexts, entries, strict=True):
        if ctx.failure is not None:
            outcomes.append(classify(ctx.attempt_of, exc=ctx.failure))
        elif isinstance(entry, BaseException):
            outcomes.append(classify(ctx.attempt_of, exc=entry))
        else:
            outcomes.append(classify(ctx.attempt_of, entry))
    return outcomes
