"""Cluster-wide queue limits, enforced inside the hot plane's claim and start gate: the
limits a claim obeys, what the claim and the gate answer, and the arithmetic the memory,
SQLite and Postgres planes share (``redis/lua/claim_limited.lua`` and
``redis/lua/start_limited.lua`` are its port).

A queue's global concurrency is its count of live leases (expiry after ``now``): jobs
running, held in a worker's prefetch buffer or settling all hold one. Its rate limit is
a sliding log of (time, lease token) entries: a claim logs each lease it takes, and the
start gate, right before the handler starts, moves that lease's entry to the start
time. Every entry is logged at ``max(now, the latest entry)``, so the log stays in time
order whatever the callers' clocks, and an entry fits only where the window ending at
it holds fewer than the limit: no half-open window of ``window_ms`` ever holds more
than the limit, so neither do the handler starts (each is an entry, at its startedAt).
A start within the window of its claim always fits (its claim counted already).
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


@dataclass(frozen=True, slots=True)
class LimitedStart:
    """The start gate's answer. ``at``: the time the starts were logged at (their runs'
    ``startedAt``), or None when the rate window is full; then ``retry_at``: when it frees
    enough room (never before)."""

    at: int | None
    retry_at: int | None = None


@dataclass
class LimitState:
    """One queue's limit state in the memory, SQLite and Postgres planes. Stored as
    ``{"s": times, "k": tokens, "h": held}``; a log without tokens (an older worker's)
    reads with token 0, which no lease has."""

    starts: list[tuple[int, int]] = field(default_factory=list)  # (time, lease token), ascending
    held: dict[int, int] = field(default_factory=dict)  # minute start -> held-back claims

    @classmethod
    def loads(cls, text: str | None) -> LimitState:
        if not text:
            return cls()
        try:
            raw = json.loads(text)
            times = [int(t) for t in raw.get("s", [])]
            tokens = [int(k) for k in raw.get("k") or []]
            if len(tokens) != len(times):
                tokens = [0] * len(times)
            starts = sorted(zip(times, tokens, strict=True), key=lambda entry: entry[0])
            return cls(starts, {int(k): int(v) for k, v in raw.get("h", {}).items()})
        except (ValueError, TypeError, AttributeError):  # hot state, only ever ours: unreadable means lost
            return cls()

    def dumps(self) -> str:
        return json.dumps({"s": [t for t, _ in self.starts], "k": [k for _, k in self.starts],
                           "h": {str(k): v for k, v in self.held.items()}}, separators=(",", ":"))

    def log_time(self, now: int) -> int:
        """When an entry made at ``now`` is logged: never before the latest entry (a caller
        that read its clock just before another's turn came first), so the log stays in order."""
        return max(now, self.starts[-1][0]) if self.starts else now

    def prune(self, at: int, window: int) -> None:
        """Keep the entries inside the window ending at ``at``."""
        self.starts = [entry for entry in self.starts if entry[0] > at - window]


def room(state: LimitState, limits: ClaimLimits, *, live: int, limit: int, now: int) -> int:
    """How many of ``limit`` jobs the limits let a claim take now (pruning the start log
    to the window)."""
    allowed = limit
    if limits.concurrency is not None:
        allowed = min(allowed, max(limits.concurrency - live, 0))
    if limits.rate is not None:
        most, window = limits.rate
        state.prune(state.log_time(now), window)
        allowed = min(allowed, max(most - len(state.starts), 0))
    return allowed


def record(state: LimitState, limits: ClaimLimits, *, tokens: list[int], held: bool, now: int) -> int | None:
    """Log the leases of ``tokens`` just claimed and, if the claim was held back, count
    it. Returns when the rate window frees a claim, if it is full now."""
    retry_at = None
    if limits.rate is not None:
        most, window = limits.rate
        at = state.log_time(now)
        state.starts.extend((at, token) for token in tokens)
        used = len(state.starts)
        if used >= most:  # the claim that frees room is the (used - most)-th oldest
            retry_at = state.starts[used - most][0] + window
    if held:
        bucket = now - now % HELD_BUCKET_MS
        state.held[bucket] = state.held.get(bucket, 0) + 1
        state.held = {b: n for b, n in state.held.items() if b > now - HELD_SPAN_MS - HELD_BUCKET_MS}
    return retry_at


def admit(state: LimitState, rate: tuple[int, int], *, tokens: list[int], now: int) -> LimitedStart:
    """The start gate: log the starts of the leases ``tokens`` (1 to ``rate[0]`` of them)
    at one time, moving their claims' entries there, if the window ending then has room
    for all of them; else log nothing and say when it will."""
    most, window = rate
    at = state.log_time(now)
    state.prune(at, window)
    mine = set(tokens)
    others = [t for t, token in state.starts if token not in mine]
    over = len(others) + len(tokens) - most
    if over > 0:  # the over-th oldest of the others leaves the window first
        return LimitedStart(None, others[over - 1] + window)
    state.starts = [(t, token) for t, token in state.starts if token not in mine] + [(at, token) for token in tokens]
    return LimitedStart(at)


def held_in_last_hour(held: dict[int, int], now: int) -> int:
    """Held-back claims in the minutes overlapping the last hour."""
    return sum(n for bucket, n in held.items() if bucket + HELD_BUCKET_MS > now - HELD_SPAN_MS and bucket <= now)
