"""The hot plane's facade: binds a scope, times every call with a stable action name,
and gives modules one object to talk to whichever backend is configured."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

from .backends.claim_limits import ClaimLimits, LimitedClaim, LimitedStart
from .backends.hot_types import HotSample, Lease, QueueDepths, Signal
from .backends.protocols import Broadcasting, BroadcastSubscription, HotPlane
from .backends.rate_types import Ban, RateAnswer, RateCheck, RateRequest, Tier
from .backends.types import Scope

logger = logging.getLogger(__name__)
T = TypeVar("T")


class HotPlaneFacade:
    """Scoped access to a :class:`HotPlane` (see the protocol for each call's meaning)."""

    def __init__(self, plane: HotPlane, *, project: str, environment: str) -> None:
        self.plane = plane
        self.scope = Scope(project, environment)

    def scoped(self, *, project: str, environment: str) -> HotPlaneFacade:
        return HotPlaneFacade(self.plane, project=project, environment=environment)

    def _call(self, action: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        if not logger.isEnabledFor(logging.DEBUG):
            return fn(self.scope, *args, **kwargs)
        started = time.perf_counter()
        try:
            return fn(self.scope, *args, **kwargs)
        finally:
            logger.debug(
                "%s on %s took %.2f ms", action, self.plane.name, (time.perf_counter() - started) * 1000,
                extra={"action": action, "backend": self.plane.name},
            )

    def close(self) -> None:
        self.plane.close()

    @property
    def resets(self) -> int:
        """How many times this process found the plane emptied by a crash (0 where a plane cannot tell)."""
        return int(getattr(self.plane, "resets", 0))

    @property
    def epoch(self) -> str | None:
        """The plane's current epoch where it keeps one (postgres), else None."""
        epoch = getattr(self.plane, "epoch", None)
        return None if epoch is None else str(epoch)

    def signal(self, queue: str, signals: Sequence[Signal], now: int) -> None:
        if signals:
            self._call("hot.signal", self.plane.signal, queue, signals, now)

    def claim(self, queue: str, *, worker_id: str, limit: int, lease_ms: int, now: int) -> list[Lease]:
        return self._call(
            "hot.claim", self.plane.claim, queue, worker_id=worker_id, limit=limit, lease_ms=lease_ms, now=now
        )

    def claim_limited(self, queue: str, *, worker_id: str, limit: int, lease_ms: int, now: int,
                      limits: ClaimLimits) -> LimitedClaim:
        return self._call("hot.claim_limited", self.plane.claim_limited, queue, worker_id=worker_id, limit=limit,
                          lease_ms=lease_ms, now=now, limits=limits)

    def start_limited(self, queue: str, *, tokens: Sequence[int], now: int, rate: tuple[int, int]) -> LimitedStart:
        return self._call("hot.start_limited", self.plane.start_limited, queue, tokens=tokens, now=now, rate=rate)

    def limit_held(self, queue: str, now: int) -> int:
        return self._call("hot.limit_held", self.plane.limit_held, queue, now)

    def extend(self, queue: str, leases: Sequence[Lease], *, lease_ms: int, now: int) -> list[Lease]:
        if not leases:
            return []
        return self._call("hot.extend", self.plane.extend, queue, leases, lease_ms=lease_ms, now=now)

    def ack(self, queue: str, leases: Sequence[Lease]) -> set[str]:
        if not leases:
            return set()
        return self._call("hot.ack", self.plane.ack, queue, leases)

    def release(self, queue: str, lease: Lease, signal: Signal, now: int) -> bool:
        return self._call("hot.release", self.plane.release, queue, lease, signal, now)

    def take_expired(self, queue: str, *, now: int, limit: int) -> list[Lease]:
        return self._call("hot.take_expired", self.plane.take_expired, queue, now=now, limit=limit)

    def leases_of(self, queue: str, worker_id: str) -> list[Lease]:
        return self._call("hot.leases_of", self.plane.leases_of, queue, worker_id)

    def remove(self, queue: str, job_ids: Sequence[str]) -> set[str]:
        if not job_ids:
            return set()
        return self._call("hot.remove", self.plane.remove, queue, job_ids)

    def promote(self, queue: str, job_id: str, now: int) -> bool:
        return self._call("hot.promote", self.plane.promote, queue, job_id, now)

    def present(self, queue: str, job_ids: Sequence[str]) -> set[str]:
        if not job_ids:
            return set()
        return self._call("hot.present", self.plane.present, queue, job_ids)

    def sample(self, queue: str, *, limit: int) -> HotSample:
        return self._call("hot.sample", self.plane.sample, queue, limit=limit)

    def depths(self, queue: str, now: int) -> QueueDepths:
        return self._call("hot.depths", self.plane.depths, queue, now)

    def depths_many(self, queues: Sequence[str], now: int) -> dict[str, QueueDepths]:
        """:meth:`depths` of each of ``queues``: one call when the backend has a batched
        ``depths_many`` (Postgres), one per queue otherwise."""
        if not queues:
            return {}
        batched = getattr(self.plane, "depths_many", None)
        if batched is None:
            return {queue: self.depths(queue, now) for queue in queues}
        found = self._call("hot.depths_many", batched, list(queues), now)
        return {queue: found.get(queue, QueueDepths(0, 0, 0)) for queue in queues}

    def next_due(self, queue: str) -> int | None:
        return self._call("hot.next_due", self.plane.next_due, queue)

    def wait(self, queues: Sequence[str], timeout: float) -> bool:
        return self.plane.wait(self.scope, queues, timeout)

    def acquire_lock(self, name: str, owner: str, *, ttl_ms: int, now: int) -> bool:
        return self._call("hot.acquire_lock", self.plane.acquire_lock, name, owner, ttl_ms=ttl_ms, now=now)

    def release_lock(self, name: str, owner: str) -> bool:
        return self._call("hot.release_lock", self.plane.release_lock, name, owner)

    def lock_owner(self, name: str, now: int) -> str | None:
        return self._call("hot.lock_owner", self.plane.lock_owner, name, now)

    def incr(self, name: str, by: int = 1) -> int:
        return self._call("hot.incr", self.plane.incr, name, by)

    def get_counters(self, names: Sequence[str]) -> dict[str, int]:
        return self._call("hot.get_counters", self.plane.get_counters, names)

    def kv_set(self, group: str, items: Mapping[str, str], *, ttl_ms: int, now: int) -> None:
        if items:
            self._call("hot.kv_set", self.plane.kv_set, group, items, ttl_ms=ttl_ms, now=now)

    def kv_get(self, group: str, keys: Sequence[str], now: int) -> dict[str, str]:
        if not keys:
            return {}
        return self._call("hot.kv_get", self.plane.kv_get, group, keys, now)

    def kv_all(self, group: str, now: int) -> dict[str, str]:
        return self._call("hot.kv_all", self.plane.kv_all, group, now)

    def kv_delete(self, group: str, keys: Sequence[str]) -> None:
        if keys:
            self._call("hot.kv_delete", self.plane.kv_delete, group, keys)

    def rate_hit(self, request: RateRequest, now: int) -> RateAnswer:
        return self._call("hot.rate_hit", self.plane.rate_hit, request, now)

    def rate_checker(self, name: str, tiers: tuple[Tier, ...], ban: Ban | None) -> RateCheck:
        """``rate_hit`` for one limiter, bound once: a plane that can build what every check
        repeats (Redis: the script's constant arguments) does it here. Timed only if DEBUG
        was on at binding."""
        bind = getattr(self.plane, "rate_checker", None)
        if bind is not None and not logger.isEnabledFor(logging.DEBUG):
            bound: RateCheck | None = bind(self.scope, name, tiers, ban)
            if bound is not None:
                return bound
        return lambda key, cost, now: self.rate_hit(RateRequest(name, key, cost, tiers, ban), now)

    def rate_drop(self, name: str, key: str, fields: Sequence[str]) -> None:
        if fields:
            self._call("hot.rate_drop", self.plane.rate_drop, name, key, fields)

    def rate_override(self, name: str, key: str, limits: Sequence[int], *, ttl_ms: int, now: int) -> None:
        self._call("hot.rate_override", self.plane.rate_override, name, key, limits, ttl_ms=ttl_ms, now=now)

    def kv_get_with_counters(
        self, group: str, keys: Sequence[str], counters: Sequence[str], now: int
    ) -> tuple[dict[str, str], dict[str, int]]:
        return self._call("hot.kv_get_with_counters", self.plane.kv_get_with_counters, group, keys, counters, now)

    def kv_prune(self, group: str, now: int) -> int:
        return self._call("hot.kv_prune", self.plane.kv_prune, group, now)

    # -- broadcast (the cache's L1 invalidations) ---------------------------------------

    @property
    def supports_broadcast(self) -> bool:
        return self.plane.supports_broadcast

    def broadcast(self, channel: str, message: str) -> None:
        """Send ``message`` to every listener of ``channel``; nothing where the plane
        cannot broadcast (:attr:`supports_broadcast`)."""
        if self.plane.supports_broadcast:
            self._call("hot.broadcast", cast(Broadcasting, self.plane).broadcast, channel, message)

    def listen(self, channel: str, handler: Callable[[str | None], None]) -> BroadcastSubscription | None:
        """Call ``handler`` with each message of ``channel`` (None: some may be lost);
        None where the plane cannot broadcast."""
        if not self.plane.supports_broadcast:
            return None
        return self._call("hot.listen", cast(Broadcasting, self.plane).listen, channel, handler)
