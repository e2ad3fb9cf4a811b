"""The rate-limit algorithms on one key's state, in integers only, for the planes that
run Python next to the data (memory, and SQLite as a SQL function). redis/lua/rate_hit.lua
(shaped for its cost: its header says how) and postgres/sql/hot_schema.sql (oqron_rate_hit)
are ports: change all three (tests/engine/hot/test_rate_step_agreement.py compares them).

A key's state maps a tier's ``field`` to its numbers, ``"ban"`` to [window start,
strikes, banned until] and ``"ov"`` to the overriding limits (one per tier).
"""

from __future__ import annotations

from .rate_types import RateAnswer, RateRequest, Tier

State = dict[str, list[int]]
# (allowed, limit, remaining, reset, retry_after, new numbers)
Outcome = tuple[bool, int, int, int, int, list[int]]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _window(nums: list[int], period: int, now: int) -> tuple[int, int]:
    """The window index and ``now``; a clock behind the stored window never reopens it."""
    window = now // period
    if nums and nums[0] > window:
        return nums[0], nums[0] * period
    return window, now


def _fixed(nums: list[int], limit: int, period: int, cost: int, now: int) -> Outcome:
    window, now = _window(nums, period, now)
    used = nums[1] if nums and nums[0] == window else 0
    allowed = used + cost <= limit
    reset = (window + 1) * period
    after = used + cost if allowed else used
    return allowed, limit, limit - after, reset, 0 if allowed else reset - now, [window, used + cost]


def _sliding(nums: list[int], limit: int, period: int, cost: int, now: int) -> Outcome:
    window, now = _window(nums, period, now)
    cur, prev = 0, 0
    if nums and nums[0] == window:
        cur, prev = nums[1], nums[2]
    elif nums and nums[0] == window - 1:
        prev = nums[1]
    elapsed = now - window * period
    used = cur + prev * (period - elapsed) // period
    allowed = used + cost <= limit
    retry = 0
    if not allowed:
        room = limit - cur - cost
        first = period - _ceil_div((room + 1) * period, prev) + 1 if room >= 0 and prev > 0 else period
        if first < period:
            retry = first - elapsed
        else:  # only next window: this window's count becomes the weighted previous one
            later = max(0, period - _ceil_div((limit - cost + 1) * period, cur) + 1) if cur > 0 else 0
            retry = period - elapsed + later
    after = used + cost if allowed else used
    return allowed, limit, limit - after, (window + 1) * period, retry, [window, cur + cost, prev]


def _bucket(nums: list[int], limit: int, period: int, cost: int, now: int) -> Outcome:
    # Levels are tokens x period, refilled by `limit` per ms: exact integers.
    full = limit * period
    level = min(full, nums[1] + max(0, now - nums[0]) * limit) if nums else full
    now = max(now, nums[0]) if nums else now  # a lagging clock refills nothing
    need = cost * period
    allowed = level >= need
    after = level - need if allowed else level
    retry = 0 if allowed else _ceil_div(need - level, limit)
    return allowed, limit, after // period, now + _ceil_div(full - after, limit), retry, [now, level - need]


def _gcra(nums: list[int], limit: int, period: int, cost: int, now: int) -> Outcome:
    # The theoretical arrival time is tat_ms + frac / limit: exact integers.
    tat, frac = (nums[0], nums[1]) if nums and nums[0] >= now else (now, 0)
    spread = frac + cost * period
    new_tat, new_frac = tat + spread // limit, spread % limit
    ahead = (new_tat - now) * limit + new_frac
    allowed = ahead <= period * limit
    held = ahead if allowed else (tat - now) * limit + frac
    retry = 0 if allowed else _ceil_div(ahead - period * limit, limit)
    return (allowed, limit, (period * limit - held) // period, now + _ceil_div(held, limit), retry,
            [new_tat, new_frac])


_ALGORITHMS = {"fixed-window": _fixed, "sliding-window": _sliding, "token-bucket": _bucket, "gcra": _gcra}


def ttl_ms(request: RateRequest) -> int:
    """How long a key's state must outlive its last write (sliding windows read the
    previous window; a ban may outlast every tier)."""
    longest = max(tier.period_ms * (2 if tier.algorithm == "sliding-window" else 1) for tier in request.tiers)
    if request.ban is not None:
        longest = max(longest, request.ban.window_ms, request.ban.duration_ms)
    return longest


def limits_of(state: State, tiers: tuple[Tier, ...]) -> list[int]:
    """Each tier's limit, or the key's override of it."""
    override = state.get("ov")
    if override and len(override) == len(tiers):
        return list(override)
    return [tier.limit for tier in tiers]


def step(state: State, request: RateRequest, now: int) -> tuple[RateAnswer, State | None]:
    """The answer to ``request`` at ``now`` and the key's new state (None: unchanged)."""
    ban = state.get("ban")
    if ban and ban[2] > now:
        first = request.tiers[0]
        return RateAnswer(False, first.limit, 0, ban[2], ban[2] - now, banned=True), None
    limits = limits_of(state, request.tiers)
    outcomes = [
        _ALGORITHMS[tier.algorithm](state.get(tier.field, []), limit, tier.period_ms, request.cost, now)
        for tier, limit in zip(request.tiers, limits, strict=True)
    ]
    allowed = all(outcome[0] for outcome in outcomes)
    if allowed:
        index = min(range(len(outcomes)), key=lambda i: outcomes[i][2])
    else:
        index = max((i for i, outcome in enumerate(outcomes) if not outcome[0]), key=lambda i: outcomes[i][4])
    binding = outcomes[index]
    answer = RateAnswer(allowed, binding[1], binding[2], binding[3], binding[4], tier=index)
    if request.cost == 0:
        return answer, None
    if allowed:
        new = dict(state)
        new.update({tier.field: outcome[5] for tier, outcome in zip(request.tiers, outcomes, strict=True)})
        return answer, new
    if request.ban is None:
        return answer, None
    struck = _strike(ban, request, now)
    if struck[2]:  # this refusal starts a ban: say so, and how long it lasts
        answer = RateAnswer(False, answer.limit, 0, struck[2], struck[2] - now, banned=True, tier=index)
    return answer, {**state, "ban": struck}


def _strike(ban: list[int] | None, request: RateRequest, now: int) -> list[int]:
    assert request.ban is not None
    start, strikes = (ban[0], ban[1]) if ban and now - ban[0] < request.ban.window_ms else (now, 0)
    strikes += 1
    if strikes >= request.ban.strikes:
        return [now, 0, now + request.ban.duration_ms]
    return [start, strikes, 0]
