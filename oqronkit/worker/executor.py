"""Running handlers: sync ones in the calling slot thread, ``async def`` ones on one event loop.

One behaviour, two forms: :func:`classify` turns whatever a handler did into an
:class:`Outcome`; the sync and async runners only differ in how they call it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Any

from ..codec import dumps_compact
from ..errors import Discard
from ..runs import describe_error
from .context import JobContext
from .inflight import Inflight, Outcome

logger = logging.getLogger(__name__)


def classify(inflight: Inflight, output: Any = None, exc: BaseException | None = None) -> Outcome:
    """Turn a handler's return value or exception into an outcome."""
    if exc is None:
        try:
            if output is not None:
                dumps_compact(output)  # a cycle or nesting too deep is a ValueError here
        except (TypeError, ValueError) as err:
            return Outcome(inflight, "failed", error=describe_error(
                TypeError(f"the handler returned a value that is not JSON-serialisable: {err}")))
        if inflight.cancelled.is_set() and inflight.cancel_reason and not inflight.lease_lost:
            # It noticed the cancel request and returned early: record a cancellation.
            if inflight.cancel_reason != "shutdown":
                return Outcome(inflight, "cancelled", output=output)
        return Outcome(inflight, "completed", output=output)
    if isinstance(exc, Discard):
        return Outcome(inflight, "discarded", error=describe_error(exc, kind="Discarded"))
    if isinstance(exc, asyncio.CancelledError) and inflight.cancel_reason:
        return Outcome(inflight, "cancelled", error=describe_error(exc, kind="Cancelled"))
    return Outcome(inflight, "failed", error=describe_error(exc))


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
        asyncio.run_coroutine_threadsafe(self._run_async(inflight), self._event_loop())

    def run_sync(self, inflight: Inflight) -> None:
        """Run a sync handler in the calling thread (a queue's slot)."""
        if inflight.settled:  # lost its lease (or the worker stopped) before a thread took it
            return
        try:
            output = inflight.queue.fn(self._make_ctx(inflight))
        except BaseException as exc:
            self._on_outcome(classify(inflight, exc=exc))
            return
        self._on_outcome(classify(inflight, output))

    async def _run_async(self, inflight: Inflight) -> None:
        if inflight.settled:
            return
        ctx = self._make_ctx(inflight)
        task = asyncio.current_task()
        assert task is not None
        inflight.attach_task(asyncio.get_running_loop(), task)
        try:
            output = await inflight.queue.fn(ctx)
        except BaseException as exc:
            self._on_outcome(classify(inflight, exc=exc))
            return
        self._on_outcome(classify(inflight, output))

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        with self._loop_lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="oqron-async", daemon=True).start()
                self._loop = loop
            return self._loop

    def shutdown(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
