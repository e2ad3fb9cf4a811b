"""Value types of the hot plane (broker claims, leases, locks, ephemeral keys)."""

from __future__ import annotations

from dataclasses import dataclass, field

#: Priorities run highest first and are bounded so (priority, sequence) packs into one
#: sortable number on every backend (a Redis sorted-set score is a double).
MIN_PRIORITY = -1000
MAX_PRIORITY = 1000


@dataclass(frozen=True, slots=True)
class Signal:
    """Put a job id into a queue's claim structures: ready now, or due at ``run_at``.

    ``run_at`` (epoch ms) in the future puts it in the due-time set (no lease, not
    claimable); None or a past time makes it claimable at once. ``lifo`` reverses the
    enqueue order among jobs of equal priority.
    """

    job_id: str
    priority: int = 0
    run_at: int | None = None
    lifo: bool = False


@dataclass(frozen=True, slots=True)
class Lease:
    """A claimed job: only the holder of ``token`` may extend, ack or release it.
    ``worker`` is who claimed it, where the plane says (take_expired, leases_of); not
    compared, so a lease read back equals the one the claim handed out."""

    job_id: str
    token: int
    expires_at: int
    worker: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class QueueDepths:
    ready: int
    delayed: int
    active: int


@dataclass(frozen=True, slots=True)
class HotSample:
    """A bounded look at one queue's claim structures (``HotPlane.sample``): up to
    ``limit`` job ids of each of ready, delayed and leased, and the ``limit`` leases
    that lapse first, earliest first."""

    entries: tuple[str, ...]
    leases: tuple[Lease, ...]
