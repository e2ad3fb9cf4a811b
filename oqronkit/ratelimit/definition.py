"""A rate limiter's validated definition (algorithm, tiers, ban) and its durable record."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ..backends.rate_types import ALGORITHMS, Algorithm, Ban, Tier
from ..errors import ConfigurationError, InvalidJob
from ..queues.backoff import to_ms

#: Bounds that keep every plane's arithmetic exact: limit x period stays below 2^53.
MAX_LIMIT = 1_000_000
MAX_PERIOD_MS = 31 * 24 * 3600 * 1000
MAX_TIERS = 8
MAX_NAME = 200
MAX_KEY = 512

Period = float | timedelta


class RateLimitConfigError(ConfigurationError):
    """A rate limiter was declared with values it cannot enforce."""


class InvalidRateKey(ConfigurationError):
    """A key or cost passed to a rate limiter's call is not usable."""


def _period_ms(name: str, value: Any, what: str) -> int:
    try:
        ms = to_ms(value, what=f"Rate limiter {name!r}: {what}")
    except InvalidJob as exc:
        raise RateLimitConfigError(str(exc)) from exc
    if ms is None or not 1 <= ms <= MAX_PERIOD_MS:
        raise RateLimitConfigError(
            f"Rate limiter {name!r}: {what} must be from 1 ms to 31 days, got {value!r}.")
    return ms


def _limit(name: str, value: Any, what: str = "limit") -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_LIMIT:
        raise RateLimitConfigError(
            f"Rate limiter {name!r}: {what} must be an integer from 1 to {MAX_LIMIT:,}, got {value!r}.")
    return value


def check_name(name: Any) -> str:
    if not isinstance(name, str) or not name or len(name) > MAX_NAME or not name.isprintable():
        raise RateLimitConfigError(f"A rate limiter's name must be 1-{MAX_NAME} printable characters, got {name!r}.")
    return name


def build_tiers(name: str, algorithm: Any, limit: Any, period: Any, tiers: Iterable[Any] | None) -> tuple[Tier, ...]:
    """``limit``/``period`` and ``tiers`` (``(limit, period)`` pairs or ``{"limit", "period"}``)
    as one tuple of tiers, shortest period first."""
    if algorithm not in ALGORITHMS:
        raise RateLimitConfigError(
            f"Rate limiter {name!r}: algorithm must be one of {', '.join(ALGORITHMS)}, got {algorithm!r}.")
    pairs: list[tuple[Any, Any]] = []
    if limit is not None or period is not None:
        if limit is None or period is None:
            raise RateLimitConfigError(f"Rate limiter {name!r}: give both limit and period, or neither.")
        pairs.append((limit, period))
    for tier in tiers or ():
        if isinstance(tier, Mapping) and set(tier) == {"limit", "period"}:
            pairs.append((tier["limit"], tier["period"]))
        elif isinstance(tier, (tuple, list)) and len(tier) == 2:
            pairs.append((tier[0], tier[1]))
        else:
            raise RateLimitConfigError(
                f"Rate limiter {name!r}: each tier is (limit, period) or {{'limit', 'period'}}, got {tier!r}.")
    if not 1 <= len(pairs) <= MAX_TIERS:
        raise RateLimitConfigError(f"Rate limiter {name!r}: give 1 to {MAX_TIERS} tiers (limit and period, or tiers).")
    alg: Algorithm = algorithm
    built = sorted((Tier(alg, _limit(name, lim), _period_ms(name, per, "period")) for lim, per in pairs),
                   key=lambda tier: tier.period_ms)
    if len({tier.period_ms for tier in built}) != len(built):
        raise RateLimitConfigError(f"Rate limiter {name!r}: two tiers have the same period.")
    return tuple(built)


def build_ban(name: str, ban: Any) -> Ban | None:
    """``ban=(strikes, within, duration)`` or ``{"after", "within", "for"}``: denied
    ``strikes`` times within ``within`` seconds bans the key for ``duration`` seconds."""
    if ban is None:
        return None
    if isinstance(ban, Mapping) and set(ban) == {"after", "within", "for"}:
        ban = (ban["after"], ban["within"], ban["for"])
    if not isinstance(ban, (tuple, list)) or len(ban) != 3:
        raise RateLimitConfigError(
            f"Rate limiter {name!r}: ban is (strikes, within, duration) or {{'after', 'within', 'for'}}, got {ban!r}.")
    return Ban(_limit(name, ban[0], "ban strikes"), _period_ms(name, ban[1], "ban window"),
               _period_ms(name, ban[2], "ban duration"))


@dataclass(frozen=True, slots=True)
class Definition:
    name: str
    tiers: tuple[Tier, ...]
    ban: Ban | None
    dry_run: bool
    fail_open: bool

    def record(self) -> dict[str, Any]:
        """The ``ratelimit`` definition record's value (its times added when written)."""
        ban = self.ban
        return {
            "name": self.name, "algorithm": self.tiers[0].algorithm,
            "tiers": [{"limit": tier.limit, "periodMs": tier.period_ms} for tier in self.tiers],
            "ban": None if ban is None else {"strikes": ban.strikes, "windowMs": ban.window_ms,
                                             "durationMs": ban.duration_ms},
            "dryRun": self.dry_run, "failOpen": self.fail_open,
        }


def check_key(name: str, key: Any) -> str:
    if not isinstance(key, str) or not key or len(key) > MAX_KEY:
        raise InvalidRateKey(f"Rate limiter {name!r}: a key must be a non-empty string of at most {MAX_KEY} "
                             f"characters, got {key!r}.")
    return key


def check_cost(name: str, cost: Any, tiers: tuple[Tier, ...]) -> int:
    smallest = min(tier.limit for tier in tiers)
    if not isinstance(cost, int) or isinstance(cost, bool) or not 1 <= cost <= smallest:
        raise InvalidRateKey(
            f"Rate limiter {name!r}: cost must be an integer from 1 to the smallest limit ({smallest}), got {cost!r}.")
    return cost
