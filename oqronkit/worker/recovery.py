"""What a worker holds after a claim or an ack whose reply it never got.

A connection closed, reset or timed out after the request went out leaves the worker
unsure: the claim may have run (on a Redis Cluster, reached the replica promoted next)
and leased jobs the worker never heard of, an ack may or may not have dropped its
leases. Left alone, such a lease sits idle until it lapses, and the job waits a lease
period for the rescuer. So the queue is marked unsure, and once the hot plane answers,
the claim loop asks it which leases carry this worker's id (``HotPlane.leases_of``) and
takes back those it does not know of: they are read and run like a fresh claim, and a
job already gone from the durable plane (a completion whose ack was lost) has its lease
acked again, which is idempotent under its token.

Any failed claim or ack marks the queue, a refused connection too: telling "not sent"
from "no reply" apart is not worth a guess, and the check costs one read after an outage.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..backends.hot_types import Lease

if TYPE_CHECKING:
    from .buffer import QueueBuffer
    from .state import WorkerState


def strays(state: WorkerState, buffer: QueueBuffer, finisher_tokens: Callable[[str], set[int]],
           also_known: list[Lease]) -> list[Lease]:
    """The leases of ``buffer``'s queue the hot plane says this worker holds but that it
    does not know of: not in flight, not held by the finisher, not in ``also_known``.

    What is known is read before the plane is asked: a lease released in between was
    known, and no lease of this worker appears meanwhile but from a claim, which only
    the caller (the queue's claim loop) makes. Raises the plane's error."""
    queue = buffer.queue.name
    with state.lock:
        known = {inflight.lease.token for inflight in buffer.inflight.values()}
    known.update(lease.token for lease in also_known)
    known |= finisher_tokens(queue)
    return [lease for lease in state.hot.leases_of(queue, state.worker_id) if lease.token not in known]
