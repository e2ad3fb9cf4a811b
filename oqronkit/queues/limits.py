"""A queue's cluster-wide limits (``queue(..., rate_limit=(n, seconds),
global_concurrency=n)``): their validation at declaration, and their fields in the queue's
definition record (the ``queue`` control record), where the board and every process read
them. The hot plane enforces them at claim time (``HotPlane.claim_limited``) and the rate
again right before handlers start (``HotPlane.start_limited``, ``worker/start_gate.py``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypeGuard

from ..backends.claim_limits import ClaimLimits
from ..errors import ConfigurationError
from .batch import Batch

#: Most claims one rate window may count: each is an entry of the queue's start log.
MAX_RATE = 10_000
#: Shortest and longest rate window (ms): 1 ms to 31 days, as the rate limiters.
MIN_WINDOW_MS = 1
MAX_WINDOW_MS = 31 * 24 * 3_600_000
#: Most live leases a global concurrency may allow.
MAX_GLOBAL_CONCURRENCY = 100_000


def check_queue_limits(name: str, *, rate_limit: Any, global_concurrency: Any,
                       prefetch: Any = None, batch: Batch | None = None) -> ClaimLimits | None:
    """The queue's limits as the hot plane takes them (None when it has none), or a
    :class:`ConfigurationError` naming the bad value."""
    rate = None if rate_limit is None else _rate(name, rate_limit)
    if rate is not None and batch is not None and batch.size > rate[0]:  # one call starts the whole batch
        raise ConfigurationError(f"Queue {name!r}: a batch handler starts every job of its batch at once, so "
                                 f"the batch size ({batch.size}) must be at most rate_limit's starts per "
                                 f"window ({rate[0]}).")
    if global_concurrency is not None and not _count(global_concurrency, MAX_GLOBAL_CONCURRENCY):
        raise ConfigurationError(f"Queue {name!r}: global_concurrency must be an integer from 1 to "
                                 f"{MAX_GLOBAL_CONCURRENCY:,}, got {global_concurrency!r}.")
    if rate is None and global_concurrency is None:
        return None
    if prefetch:  # a prefetched job holds a lease and a logged start without running
        raise ConfigurationError(f"Queue {name!r}: a queue with rate_limit or global_concurrency claims only "
                                 f"what it starts; leave prefetch unset or 0, got {prefetch!r}.")
    return ClaimLimits(concurrency=global_concurrency, rate=rate)


def _rate(name: str, rate_limit: Any) -> tuple[int, int]:
    problem = (f"Queue {name!r}: rate_limit must be (max_starts, window_seconds): an integer from 1 to "
               f"{MAX_RATE:,} and a finite window from 0.001 s to 31 days, got {rate_limit!r}.")
    if not isinstance(rate_limit, (tuple, list)) or len(rate_limit) != 2:
        raise ConfigurationError(problem)
    count, window = rate_limit
    if not _count(count, MAX_RATE) or isinstance(window, bool) or not isinstance(window, (int, float)):
        raise ConfigurationError(problem)
    if not math.isfinite(window) or not MIN_WINDOW_MS <= round(window * 1000) <= MAX_WINDOW_MS:
        raise ConfigurationError(problem)
    return count, round(window * 1000)


def _count(value: Any, top: int) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= top


def limits_fields(limits: ClaimLimits | None) -> dict[str, Any]:
    """The definition record's fields: ``rateLimit`` ``{limit, windowMs}`` and
    ``globalConcurrency``, each null when off."""
    rate = limits.rate if limits is not None else None
    return {
        "rateLimit": None if rate is None else {"limit": rate[0], "windowMs": rate[1]},
        "globalConcurrency": None if limits is None else limits.concurrency,
    }


def limits_from_record(value: Mapping[str, Any]) -> ClaimLimits | None:
    """The limits a definition record states, or None; a malformed field (a record
    written by hand) counts as off."""
    rate_field = value.get("rateLimit")
    rate = None
    if isinstance(rate_field, Mapping):
        limit, window = rate_field.get("limit"), rate_field.get("windowMs")
        if _count(limit, MAX_RATE) and _count(window, MAX_WINDOW_MS):
            rate = (limit, window)
    concurrency = value.get("globalConcurrency")
    concurrency = concurrency if _count(concurrency, MAX_GLOBAL_CONCURRENCY) else None
    if rate is None and concurrency is None:
        return None
    return ClaimLimits(concurrency=concurrency, rate=rate)
