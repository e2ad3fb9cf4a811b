"""Value types of the hot plane's rate-limit primitive (one check of one key)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, NamedTuple

Algorithm = Literal["sliding-window", "sliding-window-approx", "fixed-window", "token-bucket", "gcra"]
ALGORITHMS: tuple[Algorithm, ...] = ("sliding-window", "sliding-window-approx", "fixed-window", "token-bucket", "gcra")
#: The exact sliding window's state: a log of unit times (rate_step.py). Not named after
#: the algorithm: "sliding-window:<period>" holds the two-window counts it used to keep,
#: which "sliding-window-approx" still keeps there and the log starts from (rate_step.py).
LOG_STATE = "sliding-log"
_STATE_NAMES = {"sliding-window": LOG_STATE, "sliding-window-approx": "sliding-window"}


@dataclass(frozen=True, slots=True)
class Tier:
    """At most ``limit`` units per ``period_ms`` by ``algorithm``."""

    algorithm: Algorithm
    limit: int
    period_ms: int

    @property
    def field(self) -> str:
        """The state's name. Not the limit: an override changes the limit, not the count."""
        return f"{_STATE_NAMES.get(self.algorithm, self.algorithm)}:{self.period_ms}"


@dataclass(frozen=True, slots=True)
class Ban:
    """Denied ``strikes`` times within ``window_ms``: banned for ``duration_ms``."""

    strikes: int
    window_ms: int
    duration_ms: int


@dataclass(frozen=True, slots=True)
class RateRequest:
    """One check of ``key`` under limiter ``name``: all tiers take ``cost`` or none does.
    ``cost`` 0 is a peek: nothing is written."""

    name: str
    key: str
    cost: int
    tiers: tuple[Tier, ...]
    ban: Ban | None = None


class RateAnswer(NamedTuple):
    """The outcome; ``limit``/``remaining``/``reset`` describe the binding tier.
    ``reset`` and ``retry_after`` are in ms (``reset`` an epoch time). A named tuple:
    built on every check, and a frozen dataclass's constructor costs several times more."""

    allowed: bool
    limit: int
    remaining: int
    reset: int
    retry_after: int
    banned: bool = False
    tier: int = 0  # the binding tier's index in the request


#: One limiter's check bound once (``HotPlaneFacade.rate_checker``): key, cost, now (ms).
RateCheck = Callable[[str, int, int], RateAnswer]
