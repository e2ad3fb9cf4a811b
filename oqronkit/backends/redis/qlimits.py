"""The Redis hot plane's limited claim and start gate (``HotPlane.claim_limited``,
``HotPlane.start_limited``): one Lua script each. ``lua/claim_limited.lua`` counts the
live leases, prunes and reads the rate log, claims and logs; ``lua/start_limited.lua``
moves the starting leases' entries. Redis runs each with nothing in between."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..claim_limits import HELD_BUCKET_MS, HELD_SPAN_MS, ClaimLimits, LimitedClaim, LimitedStart, held_in_last_hour
from ..hot_types import Lease
from ..types import Scope
from .keys import queue_keys
from .scripts import PROMOTE_BATCH

T = TypeVar("T")


class RedisQueueLimits:
    """Mixed into :class:`~oqronkit.backends.redis.hot.RedisHotPlane`, which supplies
    the script runner and the client."""

    def _script(self, name: str, keys: Sequence[str], args: Sequence[Any], *, retry: bool = False) -> Any:
        raise NotImplementedError

    def _call(self, action: str, fn: Callable[[], T], *, retry: bool = False) -> T:
        raise NotImplementedError

    _client: Any

    def claim_limited(
        self, scope: Scope, queue: str, *, worker_id: str, limit: int, lease_ms: int, now: int,
        limits: ClaimLimits,
    ) -> LimitedClaim:
        k = queue_keys(scope, queue)
        rate, window = limits.rate or (0, 0)
        expires_at = now + lease_ms
        # Not retried: a claim whose reply was lost must not run twice.
        held, retry_at, first, *ids = json.loads(self._script(
            "claim_limited", [k.ready, k.delayed, k.meta, k.leases, k.expiry, k.seq, k.token, k.starts, k.held],
            [now, max(limit, 0), expires_at, worker_id, PROMOTE_BATCH, limits.concurrency or 0, rate, window,
             HELD_BUCKET_MS, HELD_SPAN_MS],
        ))
        leases = [Lease(job_id, int(first) + i, expires_at) for i, job_id in enumerate(ids)]
        retry = int(retry_at)
        return LimitedClaim(leases, held == 1, None if retry < 0 else retry)

    def start_limited(self, scope: Scope, queue: str, *, tokens: Sequence[int], now: int,
                      rate: tuple[int, int]) -> LimitedStart:
        # Retried like a read: run twice, it moves the same entries to a time no earlier.
        at, retry_at = self._script("start_limited", [queue_keys(scope, queue).starts],
                                    [now, rate[0], rate[1], *(str(token) for token in tokens)], retry=True)
        if int(at) < 0:
            return LimitedStart(None, int(retry_at))
        return LimitedStart(int(at))

    def limit_held(self, scope: Scope, queue: str, now: int) -> int:
        key = queue_keys(scope, queue).held
        found = self._call("limit_held", lambda: self._client.hgetall(key), retry=True)
        return held_in_last_hour({int(b): int(n) for b, n in found.items()}, now)
