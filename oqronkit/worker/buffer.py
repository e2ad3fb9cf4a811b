"""One queue's attempts in this process: claimed ahead (held), running in a slot, or
settling; and the conditions its claim loop and its slots wait on.

Every method that reads or changes the counts runs with the worker's lock held (the
caller takes it), so one lock orders every queue's claims, starts and settles.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import TYPE_CHECKING

from .inflight import Inflight
from .prefetch import Prefetch

if TYPE_CHECKING:
    from ..queues.queue import Queue

#: How far claiming may run ahead of the finisher: finished attempts waiting to be
#: settled, per unit of concurrency, and at least SETTLE_BACKLOG_FLOOR in all.
#: The finisher's cost is per batch, so fast jobs need room for big batches (figures: bench/README.md).
#: A crash re-runs at most this many finished-but-unsettled jobs.
SETTLE_BACKLOG = 8
SETTLE_BACKLOG_FLOOR = 200


class QueueBuffer:
    def __init__(self, queue: Queue, *, concurrency: int, lock: threading.RLock) -> None:
        self.queue = queue
        self.name = queue.name
        self.concurrency = concurrency
        # Throttled and limited queues claim only what they may start: a throttle's window
        # counts dispatches, and a held job would take a cluster-wide slot (its lease) or
        # rate start without running. Held jobs keep their leases renewed; a crash counts
        # them as stalled, like jobs that had just started (see docs/explanation/job-lifecycle.md).
        unbuffered = queue.throttle is not None or queue.limits is not None
        self.prefetch = Prefetch(concurrency=concurrency, fixed=0 if unbuffered else queue.prefetch)
        #: Every attempt of the queue this process holds, by job id, until settled.
        self.inflight: dict[str, Inflight] = {}
        #: Claimed but not started yet (prefetched), in claim order.
        self.held: deque[Inflight] = deque()
        #: Handlers running now: a slot frees when its attempt settles, while the
        #: finisher writes the outcome behind (bounded by SETTLE_BACKLOG).
        self.running = 0
        self.work = threading.Condition(lock)  # slots wait here for held jobs
        self.room = threading.Condition(lock)  # the claim loop waits here for room
        self.room_waiters = 0  # claim loops waiting on room: take and settled notify only then
        self.idle = False  # the last claim found nothing and nothing is in flight
        self.idle_at = 0.0  # monotonic time that claim was asked
        self._dispatched: list[float] = []  # monotonic start times inside the throttle window

    def free_slots(self) -> int:
        """How many jobs to claim now: free slots plus room in the prefetch buffer,
        topped up once it is half empty (so claims come in batches)."""
        concurrency, prefetch = self.concurrency, self.prefetch.size
        held = len(self.held)
        if held > prefetch // 2:
            return 0
        free = concurrency + prefetch - self.running - held
        # Don't run further ahead of the finisher than a few batches of outcomes.
        backlog = max(concurrency * SETTLE_BACKLOG, SETTLE_BACKLOG_FLOOR)
        free = min(free, backlog + concurrency + prefetch - len(self.inflight))
        return self._throttled(free)

    def _throttled(self, free: int) -> int:
        """``free`` cut to what the queue's throttle window still allows (never negative)."""
        throttle = self.queue.throttle
        if throttle is not None and free > 0:
            limit, window = throttle
            now = time.monotonic()
            self._dispatched = [t for t in self._dispatched if now - t < window]
            free = min(free, limit - len(self._dispatched))
        return max(free, 0)

    def claimed(self, n: int) -> None:
        """Count ``n`` jobs just claimed against the queue's throttle window."""
        if self.queue.throttle is not None:
            self._dispatched.extend([time.monotonic()] * n)

    def hold(self, held: list[Inflight]) -> None:
        """Keep claimed attempts until a slot takes them."""
        for inflight in held:
            self.inflight[inflight.job.id] = inflight
        self.held.extend(held)
        if not self.queue.is_async:
            self.work.notify(len(held))

    def take(self) -> Inflight | None:
        """The next held job, given a slot, or None when no slot is free (``running``
        never exceeds the concurrency) or nothing is held."""
        held = self.held
        while held and held[0].settled:  # its lease was lost while held
            held.popleft()
        if not held or self.running >= self.concurrency:
            return None
        inflight = held.popleft()
        inflight.started = True
        self.running += 1
        if self.room_waiters and len(held) <= self.prefetch.size // 2:  # the buffer half empty: claim more
            self.room.notify()
        return inflight

    def settled(self, inflight: Inflight) -> None:
        """An attempt of this queue settled: free its slot (a sync slot takes its next
        job itself; a replacement slot starts looking at once) and let claiming go on."""
        if inflight.started:
            self.running -= 1
        if self.room_waiters and len(self.held) <= self.prefetch.size // 2:  # a BatchBuffer holds none here
            self.room.notify()

    def take_all_held(self) -> list[Inflight]:
        held = list(self.held)
        self.held.clear()
        return held

    def forget(self, inflight: Inflight) -> None:
        # A retried job can be claimed again before its previous attempt is settled:
        # forget only this attempt, never the newer one under the same job id.
        if self.inflight.get(inflight.job.id) is inflight:
            del self.inflight[inflight.job.id]

    def wake_all(self) -> None:
        self.work.notify_all()
        self.room.notify_all()
