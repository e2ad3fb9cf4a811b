"""One queue's claims in this process, cut to its cluster-wide limits
(``queue(..., rate_limit=..., global_concurrency=...)``) by the hot plane, and the wait
after a claim the limits held back: until the rate window frees a claim, or, for the
global concurrency (freed by an ack anywhere in the cluster, which wakes no waiter), a
poll that backs off from 25 ms to a quarter of the queue's observed handler time (at
most 250 ms), so a freed slot sits idle for a small part of a job at most. A held-back
job was never claimed: it burns no attempt and holds no lease, so it can never stall.

A queue without limits on a store that claims with a read (``ClaimingStore``: postgres
mode, and redis mode on a standalone server) gets the claimed jobs' rows in the claim's
own round trip."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..backends.hot_types import Lease
from ..backends.protocols import ClaimingStore
from ..backends.types import StoredRecord
from ..clock import now_ms
from ..namespaces import classify_namespace, table_for_kind
from ..planes import signal_together

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
        store = state.durable.store
        #: Set when one call claims and reads: the store, and the table of the queue's jobs.
        self._reader = (store, table_for_kind(classify_namespace(queue.namespace))) if (
            queue.limits is None and isinstance(store, ClaimingStore) and signal_together(state.engine)) else None

    def claim(self, limit: int) -> tuple[list[Lease], list[StoredRecord] | None]:
        """Claim up to ``limit`` jobs: a plain claim, or a limited one for a limited queue;
        with the claimed jobs' records where the claim read them too (else None)."""
        state, queue = self.state, self.queue
        if self._reader is not None:
            store, table = self._reader
            return store.claim_and_read(state.durable.scope, queue.name, table, queue.namespace,
                                        worker_id=state.worker_id, limit=limit, lease_ms=queue.lease_ms, now=now_ms())
        if queue.limits is None:
            return state.hot.claim(queue.name, worker_id=state.worker_id, limit=limit, lease_ms=queue.lease_ms,
                                   now=now_ms()), None
        now = now_ms()
        got = state.hot.claim_limited(queue.name, worker_id=state.worker_id, limit=limit, lease_ms=queue.lease_ms,
                                      now=now, limits=queue.limits)
        self.held = got.held
        if got.leases or not got.held:  # progress: a slot was free, so poll soon again
            self._poll = FIRST_POLL
        if not got.held:
            return got.leases, None
        if got.retry_at is not None:  # the rate window frees a claim then (never before)
            delay = max(got.retry_at - now, 1) / 1000
        else:
            job = self._prefetch.seconds_per_job
            longest = LONGEST_POLL if job is None else min(LONGEST_POLL, max(FIRST_POLL, job / 4))
            delay, self._poll = min(self._poll, longest), min(self._poll * 2, longest)
        self._resume_at = time.monotonic() + min(delay, state.poll_interval)
        return got.leases, None

    def waiting(self) -> bool:
        """Wait (a slice, so a stop or a pause is seen) while the limits hold the queue
        back; True when the caller should look again instead of claiming."""
        left = self._resume_at - time.monotonic()
        if left <= 0:
            return False
        self.state.stopping.wait(min(left, 0.25))
        return True
