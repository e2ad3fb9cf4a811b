"""The Redis hot plane's rate limits (``HotPlane.rate_hit`` and the rest): one Lua script,
``lua/rate_hit.lua``, per check, sent as EVALSHA through redis-py's client, with a
limiter's constant arguments built once (``rate_checker``)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from ..rate_step import ttl_ms as rate_ttl_ms
from ..rate_types import LOG_STATE, Ban, RateAnswer, RateCheck, RateRequest, Tier
from ..types import Scope
from .keys import GC_GRACE_MS, rate_keys


class RedisRateLimits:
    """Mixed into :class:`~oqronkit.backends.redis.hot.RedisHotPlane`, which supplies
    the script runner and the client."""

    def _script(self, name: str, keys: Sequence[str], args: Sequence[Any], *, retry: bool = False) -> Any:
        raise NotImplementedError

    def rate_hit(self, scope: Scope, request: RateRequest, now: int) -> RateAnswer:
        return self.rate_checker(scope, request.name, request.tiers, request.ban)(request.key, request.cost, now)

    def rate_checker(self, scope: Scope, name: str, tiers: tuple[Tier, ...], ban: Ban | None) -> RateCheck:
        """``rate_hit`` for one limiter, its constant arguments built once."""
        tail, periods, script = _rate_args(tiers, ban), tuple(tier.period_ms for tier in tiers), self._script

        def check(key: str, cost: int, now: int) -> RateAnswer:
            # Not retried: a check that may have run must not count twice (replies saying
            # it did not run are: connection.not_run_retry).
            return _rate_answer(script("rate_hit", rate_keys(scope, name, key, periods), (now, cost, *tail)))

        return check

    def rate_drop(self, scope: Scope, name: str, key: str, fields: Sequence[str]) -> None:
        if fields:
            logs = tuple(int(field.rpartition(":")[2]) for field in fields if field.startswith(LOG_STATE + ":"))
            self._script("rate_drop", rate_keys(scope, name, key, logs), fields, retry=True)

    def rate_override(self, scope: Scope, name: str, key: str, limits: Sequence[int], *, ttl_ms: int,
                      now: int) -> None:
        packed = ":".join(str(int(limit)) for limit in limits)
        self._script("rate_override", rate_keys(scope, name, key, ())[:1], [packed, ttl_ms + GC_GRACE_MS],
                     retry=True)


@lru_cache(maxsize=1024)
def _rate_args(tiers: tuple[Tier, ...], ban: Ban | None) -> tuple[str, ...]:
    """A limiter's fixed ARGV tail of rate_hit.lua, built once per limiter, not per check."""
    request = RateRequest("", "", 1, tiers, ban)
    banning = f"{ban.strikes}:{ban.window_ms}:{ban.duration_ms}" if ban and ban.strikes > 0 else "0"
    return (str(rate_ttl_ms(request) + GC_GRACE_MS), banning,
            *(str(part) for tier in tiers for part in (tier.algorithm, tier.limit, tier.period_ms, tier.field)))


def _rate_answer(reply: str) -> RateAnswer:
    allowed, limit, remaining, reset, retry, banned, tier = map(int, reply.split(":"))
    return RateAnswer(allowed == 1, limit, remaining, reset, retry, banned=banned == 1, tier=tier)
