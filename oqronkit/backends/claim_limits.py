"""Cluster-wide queue limits, enforced inside the hot plane's claim: the limits a claim
obeys, what it answers, and the arithmetic the memory, SQLite and Postgres planes share
(``redis/lua/claim_limited.lua`` is its port).

A queue's global concurrency is its count of live leases (expiry after ``now``): jobs
running, held in a worker's prefetch buffer or settling all hold one. Its rate limit is
a sliding log of claim times: a claim at ``now`` counts the starts after
``now - window_ms``, so no half-open window of that length holds more than the limit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from .hot_types import Lease

#: Held-back claims are counted per minute, so "the last hour" is exact to a minute.
HELD_BUCKET_MS = 60_000
#: How long the per-minute counts are kept (the board shows the last hour).
HELD_SPAN_MS = 3_600_000


@dataclass(frozen=True, slots=True)
class ClaimLimits:
    """What a queue's claims may take: at most ``concurrency`` live leases, at most
    ``rate[0]`` claims in any ``rate[1]`` ms. None: that limit is off."""

    concurrency: int | None = None
    rate: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class LimitedClaim:
    """A limited claim's answer. ``held``: a limit cut it short while ready jobs waited
    (counted for the board); ``retry_at``: when the rate window frees a claim, if the rate
    limit was what held it (a concurrency hold frees when some lease is acked)."""

    leases: list[Lease]
    held: bool = False
    retry_at: int | None = None


@dataclass
class LimitState:
    """One queue's limit state in the memory, SQLite and Postgres planes."""

    starts: list[int] = field(default_factory=list)  # claim times, ascending
    held: dict[int, int] = field(default_factory=dict)  # minute start -> held-back claims

    @classmethod
    def loads(cls, text: str | None) -> LimitState:
        if not text:
            return cls()
        try:
            raw = json.loads(text)
            return cls(sorted(int(t) for t in raw.get("s", [])), {int(k): int(v) for k, v in raw.get("h", {}).items()})
        except (ValueError, TypeError, AttributeError):  # hot state, only ever ours: unreadable means lost
            return cls()

    def dumps(self) -> str:
        return json.dumps({"s": self.starts, "h": {str(k): v for k, v in self.held.items()}}, separators=(",", ":"))


def room(state: LimitState, limits: ClaimLimits, *, live: int, limit: int, now: int) -> int:
    """How many of ``limit`` jobs the limits let a claim take now (pruning the start log
    to the window)."""
    allowed = limit
    if limits.concurrency is not None:
        allowed = min(allowed, max(limits.concurrency - live, 0))
    if limits.rate is not None:
        most, window = limits.rate
        state.starts = [t for t in state.starts if t > now - window]
        allowed = min(allowed, max(most - len(state.starts), 0))
    return allowed


def record(state: LimitState, limits: ClaimLimits, *, claimed: int, held: bool, now: int) -> int | None:
    """Log ``claimed`` starts at ``now`` and, if the claim was held back, count it.
    Returns when the rate window frees a claim, if it is full now."""
    retry_at = None
    if limits.rate is not None:
        most, window = limits.rate
        state.starts.extend([now] * claimed)
        used = len(state.starts)
        if used >= most:  # the claim that frees room is the (used - most)-th oldest
            retry_at = state.starts[used - most] + window
    if held:
        bucket = now - now % HELD_BUCKET_MS
        state.held[bucket] = state.held.get(bucket, 0) + 1
        state.held = {b: n for b, n in state.held.items() if b > now - HELD_SPAN_MS - HELD_BUCKET_MS}
    return retry_at


def held_in_last_hour(held: dict[int, int], now: int) -> int:
    """Held-back claims in the minutes overlapping the last hour."""
    return sum(n for bucket, n in held.items() if bucket + HELD_BUCKET_MS > now - HELD_SPAN_MS and bucket <= now)
