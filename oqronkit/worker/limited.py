"""One queue's claims in this process, cut to its cluster-wide limits
(``queue(..., rate_limit=..., global_concurrency=...)``) by the hot plane, and the wait
after a claim the limits held back: until the rate window frees a claim, or, for the
global concurrency (freed by an ack anywhere in the cluster, which wakes no waiter), a
poll that backs off from 25 ms to a quarter of the queue's observed handler time (at
most 250 ms), so a freed slot sits idle for a small part of a job at most. A held-back
job was never claimed: it burns no attempt and holds no lease, so it can never stall."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..backends.hot_types import Lease
from ..clock import now_ms

if TYPE_CHECKING:
    from ..queues.queue import Queue
    from .prefetch import Prefetch
    from .state import WorkerState

#: The first and the longest wait between claims a global concurrency holds back (s).
FIRST_POLL = 0.025
LONGEST_POLL = 0.25


class LimitedClaims:
    """The claims of one queue's claim loop (:class:`~oqronkit.worker.consumer.Consumer`)."""

    def __init__(self, state: WorkerState, queue: Queue, prefetch: Prefetch) -> None:
        self.state = state
        self.queue = queue
        self._prefetch = prefetch  # its moving average of the handler time paces the polls
        #: The last claim was cut short by a limit while ready jobs waited.
        self.held = False
        self._resume_at = 0.0  # monotonic time before which a held queue claims nothing
        self._poll = FIRST_POLL

    def claim(self, limit: int) -> list[Lease]:
        """Claim up to ``limit`` jobs: a plain claim, or a limited one for a limited queue."""
        state, queue = self.state, self.queue
        if queue.limits is None:
            return state.hot.claim(queue.name, worker_id=state.worker_id, limit=limit, lease_ms=queue.lease_ms,
                                   now=now_ms())
        now = now_ms()
        got = state.hot.claim_limited(queue.name, worker_id=state.worker_id, limit=limit, lease_ms=queue.lease_ms,
                                      now=now, limits=queue.limits)
        self.held = got.held
        if got.leases or not got.held:  # progress: a slot was free, so poll soon again
            self._poll = FIRST_POLL
        if not got.held:
            return got.leases
        if got.retry_at is not None:  # the rate window frees a claim then (never before)
            delay = max(got.retry_at - now, 1) / 1000
        else:
            job = self._prefetch.seconds_per_job
            longest = LONGEST_POLL if job is None else min(LONGEST_POLL, max(FIRST_POLL, job / 4))
            delay, self._poll = min(self._poll, longest), min(self._poll * 2, longest)
        self._resume_at = time.monotonic() + min(delay, state.poll_interval)
        return got.leases

    def waiting(self) -> bool:
        """Wait (a slice, so a stop or a pause is seen) while the limits hold the queue
        back; True when the caller should look again instead of claiming."""
        left = self._resume_at - time.monotonic()
        if left <= 0:
            return False
        self.state.stopping.wait(min(left, 0.25))
        return True
