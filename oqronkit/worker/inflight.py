"""One claimed job while it runs: its lease, run record and settle-once outcome."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..backends.hot_types import Lease
from ..queues.jobs import Job
from ..queues.runs import ErrorValue, RunValue

if TYPE_CHECKING:
    from ..queues.queue import Queue


@dataclass(eq=False)
class Inflight:
    """A job this process holds. ``settle`` lets exactly one outcome win: the handler
    finishing, a timeout, a lost lease or a shutdown."""

    job: Job
    lease: Lease
    run: RunValue | None  # opened when the attempt starts (None while held)
    queue: Queue
    deadline: float | None  # monotonic seconds, from the job's timeout
    started: bool = False  # its handler was given a slot
    abandoned: bool = False  # settled (timeout, lost lease) while its handler still runs
    began: float = 0.0  # monotonic start time
    settle_began: float = 0.0  # monotonic, when its outcome won (set only with worker metrics on)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Set once, never waited on (handlers poll ``ctx.cancelled``): a bool, where a
    # threading.Event built a Condition and two locks for every job.
    cancelled: bool = False
    cancel_reason: str | None = None
    lease_lost: bool = False
    # The finisher acked the lease or took over its renewal (completed jobs waiting for
    # their deletion): the heartbeat must not renew it here. A renewal of an acked lease
    # recreates it (extend restores leases a hot-plane restart lost), which left a
    # phantom "active" lease until the rescuer dropped it.
    lease_released: bool = False
    overlay_dirty: bool = False
    overlay_published: bool = False
    run_stored: bool = False  # its run was sent to the durable plane while it ran
    _settled: bool = False
    _loop: Any = None
    _task: Any = None

    def settle(self) -> bool:
        with self.lock:
            if self._settled:
                return False
            self._settled = True
            return True

    @property
    def settled(self) -> bool:
        return self._settled

    def request_cancel(self, reason: str) -> None:
        """Set ``ctx.cancelled``; an ``async def`` handler is also cancelled outright."""
        if self.cancel_reason is None:
            self.cancel_reason = reason
        self.cancelled = True
        with self.lock:
            loop, task = self._loop, self._task
        if loop is not None and task is not None:
            loop.call_soon_threadsafe(task.cancel)

    def attach_task(self, loop: Any, task: Any) -> None:
        """Remember the coroutine's task so a cancel request can interrupt it."""
        with self.lock:
            self._loop, self._task = loop, task
        if self.cancelled:
            task.cancel()

    def run_snapshot(self) -> RunValue:
        """A copy of the run safe to encode while the handler keeps logging."""
        with self.lock:
            run = self.run
            assert run is not None, "a held attempt has no run yet"
            return {**run, "logs": list(run["logs"]), "timeline": list(run["timeline"])}


@dataclass(frozen=True, slots=True)
class Outcome:
    """What happened to one attempt, queued for the finisher."""

    inflight: Inflight
    kind: str  # completed | failed | discarded | cancelled | timeout | interrupted | postponed | skipped
    output: Any = None
    error: ErrorValue | None = None
    delay_ms: int | None = None  # the handler asked for this retry delay (RetryAfter) or postponement
    reason: str | None = None  # why it was postponed or skipped
