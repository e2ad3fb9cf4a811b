"""Running handlers: sync ones in the calling slot thread, ``async def`` ones on one event loop.

One behaviour, two forms: :func:`classify` turns whatever a handler did into an
:class:`Outcome`; the sync and async runners only differ in how they call it.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..codec import NestingTooDeep, dumps_compact, storage_problem
from ..correlation import enter_run, leave_run
from ..errors import Discard, InvalidJob, Postpone, RetryAfter
from ..queues.backoff import to_ms
from ..queues.gates import Skip
from ..queues.runs import describe_error, safe_text
from ..telemetry.tracing import end_consumer, start_consumer
from .context import JobContext
from .inflight import Inflight, Outcome

if TYPE_CHECKING:
    import asyncio  # imported when an async def handler runs: about 10 MiB a worker of sync ones never pays

logger = logging.getLogger(__name__)


def classify(inflight: Inflight, output: Any = None, exc: BaseException | None = None) -> Outcome:
    """Turn a handler's return value or exception into an outcome. Never raises: a
    failure to describe what the handler did fails the attempt with that reason."""
    try:
        return _classify(inflight, output, exc)
    except Exception as err:
        logger.exception("could not record what the handler of %s/%s did", inflight.job.queue, inflight.job.id,
                         extra={"action": "worker.classify_failed"})
        return Outcome(inflight, "failed", error=describe_error(err))


def _classify(inflight: Inflight, output: Any, exc: BaseException | None) -> Outcome:
    if exc is None:
        problem = None if output is None else output_problem(output)
        if problem is not None:
            return Outcome(inflight, "failed", error=describe_error(problem))
        if inflight.cancelled and inflight.cancel_reason and not inflight.lease_lost:
            # It noticed the cancel request and returned early: record a cancellation.
            if inflight.cancel_reason != "shutdown":
                return Outcome(inflight, "cancelled", output=output)
        return Outcome(inflight, "completed", output=output)
    if isinstance(exc, (RetryAfter, Postpone)):
        try:
            delay_ms = to_ms(exc.delay, what=f"{type(exc).__name__}'s delay") or 0
        except InvalidJob as bad:  # a bad delay fails the attempt with the reason, on the queue's backoff
            return Outcome(inflight, "failed", error=describe_error(bad))
        if isinstance(exc, Postpone):
            return Outcome(inflight, "postponed", delay_ms=delay_ms, reason=safe_text(exc.reason)[:500])
        return Outcome(inflight, "failed", error=describe_error(exc), delay_ms=delay_ms)
    if isinstance(exc, Skip):
        return Outcome(inflight, "skipped", reason=safe_text(exc.reason)[:500])
    if isinstance(exc, Discard):
        return Outcome(inflight, "discarded", error=describe_error(exc, kind="Discarded"))
    aio = sys.modules.get("asyncio")  # not imported: no task was ever cancelled
    if aio is not None and isinstance(exc, aio.CancelledError) and inflight.cancel_reason:
        return Outcome(inflight, "cancelled", error=describe_error(exc, kind="Cancelled"))
    return Outcome(inflight, "failed", error=describe_error(exc))


def _handler(inflight: Inflight) -> Callable[[JobContext], Any]:
    fn = inflight.queue.fn
    if fn is None:  # a worker consumes only queues with a handler (process._handled_queues)
        raise RuntimeError(f"queue {inflight.queue.name!r} has no handler in this process")
    return inflight.queue.lifecycle.handler(fn)


def output_problem(output: Any) -> Exception | None:
    """Why a handler's return value cannot be the run's output, or None: not JSON (a
    cycle included), or what no durable plane stores alike (a NUL, a lone surrogate,
    nesting past codec.MAX_JSON_DEPTH). Caught here, it fails this attempt alone; in
    the finisher it would be refused with the batch it travels in."""
    if output is None:
        return None
    try:
        text = dumps_compact(output)
    except NestingTooDeep as err:
        return ValueError(f"the handler returned a value that cannot be stored: {err}")
    except (TypeError, ValueError) as err:
        return TypeError(f"the handler returned a value that is not JSON-serialisable: {err}")
    problem = storage_problem(text)
    return None if problem is None else ValueError(f"the handler returned a value that cannot be stored: {problem}")


class Executor:
    """Runs attempts and hands each outcome to ``on_outcome`` (exactly once per
    attempt; later results of an attempt already settled by a timeout are dropped).
    Sync handlers run in the caller's thread (a queue's slot), ``async def`` ones on
    one event loop."""

    def __init__(self, *, on_outcome: Callable[[Outcome], None], make_ctx: Callable[[Inflight], JobContext]) -> None:
        self._on_outcome = on_outcome
        self._make_ctx = make_ctx
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_lock = threading.Lock()

    def submit_async(self, inflight: Inflight) -> None:
        """Schedule an ``async def`` handler on the event loop."""
        import asyncio

        asyncio.run_coroutine_threadsafe(self._run_async(inflight), self._event_loop())

    def run_sync(self, inflight: Inflight) -> None:
        """Run a sync handler in the calling thread (a queue's slot)."""
        if inflight.settled:  # lost its lease (or the worker stopped) before a thread took it
            return
        span, error = start_consumer(inflight.job, inflight.run["id"] if inflight.run else None), None
        queue = inflight.queue
        # _handler inlined (once per job): a queue with a handler, as process._handled_queues checks
        handler = queue.lifecycle.handler(queue.fn) if queue.fn is not None else _handler(inflight)
        # The job's correlation id in effect for what the handler adds (no call when it has none).
        cid = inflight.job.correlation_id
        carried = None if cid is None else enter_run(cid, inflight.run)
        try:
            output = handler(self._make_ctx(inflight))
        except BaseException as exc:
            outcome, error = classify(inflight, exc=exc), exc
        else:
            outcome = classify(inflight, output)
        finally:
            if carried is not None:
                leave_run(carried)
        if span is not None:
            end_consumer(span, outcome.kind, outcome.error["message"] if outcome.error else None, error)
        self._on_outcome(outcome)

    async def _run_async(self, inflight: Inflight) -> None:
        if inflight.settled:
            return
        span, error = start_consumer(inflight.job, inflight.run["id"] if inflight.run else None), None
        try:
            import asyncio

            task = asyncio.current_task()
            assert task is not None
            inflight.attach_task(asyncio.get_running_loop(), task)
            enter_run(inflight.job.correlation_id, inflight.run)  # this task's own context
            output = await _handler(inflight)(self._make_ctx(inflight))
        except BaseException as exc:
            outcome, error = classify(inflight, exc=exc), exc
        else:
            outcome = classify(inflight, output)
        if span is not None:
            end_consumer(span, outcome.kind, outcome.error["message"] if outcome.error else None, error)
        self._on_outcome(outcome)

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        with self._loop_lock:
            if self._loop is None:
                import asyncio

                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="oqron-async", daemon=True).start()
                self._loop = loop
            return self._loop

    def shutdown(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
