"""``oqronkit.rate_limit``: declare a limiter, check keys against it, and steer a key
(peek, reset, override, unban). Counters live in the hot plane only, expiring on their own;
the definition is a ``ratelimit`` record, written once per process."""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ..backends.rate_types import RateAnswer, RateCheck
from ..clock import now_ms
from ..declared import DeclaredByName, OnEngine, put_definition
from ..errors import BackendUnavailable
from ..hot import HotPlaneFacade
from ..namespaces import RATELIMIT
from ..queues.queue import QueueHost, Registry
from .definition import (
    MAX_KEY,
    Definition,
    RateLimitConfigError,
    _limit,
    _period_ms,
    build_ban,
    build_tiers,
    check_cost,
    check_key,
    check_name,
)

logger = logging.getLogger(__name__)
DEFAULT_OVERRIDE_TTL = timedelta(days=30)
_LIMITERS: DeclaredByName[RateLimiter] = DeclaredByName()


@dataclass(frozen=True, slots=True)
class Decision:
    """A check's outcome. ``allowed`` is what to do (always True in dry-run mode);
    ``limited`` is what the limiter found. Times in ms; ``reset`` is an epoch time."""

    allowed: bool
    limited: bool
    limit: int
    remaining: int
    reset: int
    retry_after: int
    banned: bool = False
    failed_open: bool = False
    window: int = 0  # the binding tier's period (ms)

    @property
    def retry_after_seconds(self) -> int:
        """Whole seconds to wait (rounded up), as ``Retry-After`` wants them."""
        return math.ceil(self.retry_after / 1000)


class RateLimiter(OnEngine):
    """A named limit on how often each key may act: one or more tiers (all must allow, or
    none counts), an optional ban for keys that keep hitting it."""

    def __init__(self, name: str, *, algorithm: str = "sliding-window", limit: int | None = None,
                 period: float | timedelta | None = None, tiers: Iterable[Any] | None = None, ban: Any = None,
                 dry_run: bool = False, fail_open: bool = False, engine: QueueHost | None = None,
                 declares: bool = True) -> None:
        name = check_name(name)
        for flag, value in (("dry_run", dry_run), ("fail_open", fail_open)):
            if not isinstance(value, bool):
                raise RateLimitConfigError(f"Rate limiter {name!r}: {flag} must be True or False, got {value!r}.")
        self.definition = Definition(name, build_tiers(name, algorithm, limit, period, tiers),
                                     build_ban(name, ban), dry_run, fail_open)
        self._smallest = min(tier.limit for tier in self.definition.tiers)  # a cost's bound
        self._windows = tuple(tier.period_ms for tier in self.definition.tiers)
        self._engine = engine
        # ``declares=False``: a tool's handle (the board's) on a limiter a process declared:
        # it checks and steers keys but never rewrites the definition record nor registers.
        self._declared = not declares
        self._lock = threading.Lock()
        self._bound: tuple[HotPlaneFacade, RateCheck] | None = None
        if declares:
            limiters_for(self.registry)[name] = self

    def __repr__(self) -> str:
        tiers = ", ".join(f"{tier.limit}/{tier.period_ms}ms" for tier in self.definition.tiers)
        return f"<RateLimiter {self.name!r} {self.definition.tiers[0].algorithm} {tiers}>"

    @property
    def name(self) -> str:
        return self.definition.name

    # -- checks ------------------------------------------------------------------------

    def check(self, key: str, cost: int = 1, *, now: int | None = None) -> Decision:
        """Count ``cost`` against ``key`` if every tier has room (one atomic round trip);
        ``now`` (epoch ms) defaults to the wall clock."""
        # The common case checked inline (a hot path); anything else gets the full check and its message.
        if (type(key) is not str or not 0 < len(key) <= MAX_KEY
                or type(cost) is not int or not 0 < cost <= self._smallest):
            key, cost = check_key(self.name, key), check_cost(self.name, cost, self.definition.tiers)
        return self._hit(key, cost, now)

    def peek(self, key: str, *, now: int | None = None) -> Decision:
        """What a check of cost 1 would find, counting nothing."""
        return self._hit(check_key(self.name, key), 0, now)

    def _hit(self, key: str, cost: int, now: int | None) -> Decision:
        d = self.definition
        try:
            if not self._declared:
                self._declare()
            hot, bound = self.engine.hot, self._bound
            if bound is None or bound[0] is not hot:  # bound once per hot plane the engine opens
                bound = self._bound = (hot, hot.rate_checker(d.name, d.tiers, d.ban))
            answer = bound[1](key, cost, now_ms() if now is None else now)
        except BackendUnavailable:
            if not d.fail_open:
                raise
            # Availability over enforcement, as the limiter was declared: let it through.
            logger.warning("rate limiter %s let %s through: the hot plane is down", d.name, key,
                           extra={"action": "ratelimit.fail_open", "limiter": d.name})
            tier = d.tiers[0]
            return Decision(True, False, tier.limit, tier.limit, 0, 0, failed_open=True, window=tier.period_ms)
        return self._decision(answer, cost)

    def _decision(self, answer: RateAnswer, cost: int) -> Decision:
        limited = not answer.allowed
        if limited and cost and self.definition.dry_run:
            logger.info("rate limiter %s would have refused a key (dry run)", self.name,
                        extra={"action": "ratelimit.dry_run", "limiter": self.name})
        allowed = answer.allowed or self.definition.dry_run
        windows = self._windows
        return Decision(allowed, limited, answer.limit, answer.remaining, answer.reset, answer.retry_after,
                        answer.banned, False, windows[min(answer.tier, len(windows) - 1)])

    # -- steering a key ----------------------------------------------------------------

    def reset(self, key: str) -> None:
        """Forget ``key``'s counts and ban (its override stays)."""
        self._drop(key, [*(tier.field for tier in self.definition.tiers), "ban"])

    def unban(self, key: str) -> None:
        """Lift ``key``'s ban and forget its strikes; its counts stay."""
        self._drop(key, ["ban"])

    def clear_override(self, key: str) -> None:
        self._drop(key, ["ov"])

    def _drop(self, key: str, fields: Sequence[str]) -> None:
        self.engine.hot.rate_drop(self.name, check_key(self.name, key), fields)

    def override(self, key: str, limit: int | Sequence[int], *, ttl: float | timedelta = DEFAULT_OVERRIDE_TTL,
                 now: int | None = None) -> None:
        """Give ``key`` its own limit (one number for a single tier, else one per tier,
        shortest period first); it lasts ``ttl`` after the key's last use."""
        tiers = self.definition.tiers
        limits = [limit] if isinstance(limit, int) else list(limit)
        if len(limits) != len(tiers):
            raise RateLimitConfigError(f"Rate limiter {self.name!r}: give {len(tiers)} override limits, "
                                       f"one per tier (shortest period first), got {limit!r}.")
        checked = [_limit(self.name, value, "an override limit") for value in limits]
        ttl_ms = _period_ms(self.name, ttl, "override ttl")
        self.engine.hot.rate_override(self.name, check_key(self.name, key), checked, ttl_ms=ttl_ms,
                                      now=now_ms() if now is None else now)

    def _declare(self) -> None:
        """Record the limiter's definition once per process."""
        if self._declared:
            return
        with self._lock:
            if self._declared:
                return
            put_definition(self.engine.durable, RATELIMIT, self.name, self.definition.record())
            self._declared = True


def limiters_for(registry: Registry) -> dict[str, RateLimiter]:
    """The rate limiters declared against ``registry``, by name."""
    return _LIMITERS.of(registry)


def rate_limit(name: str, **options: Any) -> RateLimiter:
    """Declare (or look up) a rate limiter on the default engine."""
    return _LIMITERS.declare_or_get(RateLimiter, name, options)
