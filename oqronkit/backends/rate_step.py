"""The rate-limit algorithms on one key's state, in integers only, for the planes that
run Python next to the data (memory, and SQLite as a SQL function). redis/lua/rate_hit.lua
(shaped for its cost: its header says how) and postgres/sql/hot_schema.sql (oqron_rate_hit)
are ports: change all three (tests/engine/hot/test_rate_step_agreement.py compares them).

A key's state maps a tier's ``field`` to its numbers, ``"ban"`` to [window start,
strikes, banned until] and ``"ov"`` to the overriding limits (one per tier).

``sliding-window`` is exact: its state is a log of the units' times, and a check at ``t``
counts every unit logged at or after ``t - period``, so no window of ``period`` ms (ends
included: a finer clock that rounds down to these ms sees no more either) ever holds more
than the limit. The log is [newest, in window, *unit times ascending]: ``newest`` the
latest time logged, ``in window`` how many units are at or after ``newest - period`` (the
newest ones), kept so a check reads a few units near that edge, never the whole log. A
unit is logged at the later of its check's clock and ``newest``, so the log stays sorted;
a clock behind ``newest`` still counts from its own ``t - period``, so a window of the
callers' clocks holds no more than the limit either while they lag by at most a period
(a clock further behind counts as one period behind). Only the newest ``2 x limit`` units
are kept: the most that fall within two periods, all a lagging clock can need.
"""

from __future__ import annotations

from collections.abc import Callable

from .rate_types import RateAnswer, RateRequest, Tier

State = dict[str, list[int]]
# (allowed, limit, remaining, reset, retry_after, new numbers)
Outcome = tuple[bool, int, int, int, int, list[int]]
#: The k-th newest unit's time in a log, None past its oldest (Redis' LINDEX -k).
Unit = Callable[[int], int | None]


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


def _approx(nums: list[int], limit: int, period: int, cost: int, now: int) -> Outcome:
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


def _bisect(unit: Unit, lo: int, hi: int, bound: int) -> int:
    """The last k in [lo, hi) whose unit is at or after ``bound``, knowing unit ``lo`` is
    (or ``lo`` is 0) and unit ``hi`` is not."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        found = unit(mid)
        if found is not None and found >= bound:
            lo = mid
        else:
            hi = mid
    return lo


def _fewer(unit: Unit, known: int, bound: int) -> int:
    """How many of the newest ``known`` units are at or after ``bound``: galloping back
    from ``known``, so one or two probes when few units left the window."""
    found = unit(known) if known else None
    if found is not None and found >= bound:
        return known
    hi, step = known, 1
    lo = hi - step
    while lo > 0:
        found = unit(lo)
        if found is not None and found >= bound:
            break
        hi, step = lo, step * 2
        lo = hi - step
    return _bisect(unit, max(lo, 0), hi, bound)


def _more(unit: Unit, known: int, bound: int) -> int:
    """How many newest units are at or after ``bound``, the newest ``known`` being so:
    galloping past ``known`` (one probe when no older unit counts)."""
    lo, step = known, 1
    hi = lo + step
    while True:
        found = unit(hi)
        if found is None or found < bound:
            break
        lo, step = hi, step * 2
        hi = lo + step
    return _bisect(unit, lo, hi, bound)


def _log(nums: list[int], limit: int, period: int, cost: int, now: int) -> Outcome:
    units = nums[2:]
    count = len(units)

    def unit(k: int) -> int | None:
        return units[count - k] if 0 < k <= count else None

    newest, held = (nums[0], nums[1]) if nums else (now, 0)
    t = max(now, newest - period)  # a clock over a period behind counts as one period behind
    at = max(t, newest)  # where this check's units go: the log stays sorted
    if t > newest:  # a later clock: units before t - period leave the window
        held = _fewer(unit, held, t - period) if newest >= t - period else 0
    used = _more(unit, held, t - period) if t < newest else held  # a lagging clock counts from its own edge
    allowed = used + cost <= limit
    after = used + cost if allowed else used
    retry = 0
    if not allowed:  # when enough units have left: the (limit - cost + 1)-th newest, or all
        frees = unit(limit - cost + 1) if cost <= limit else newest if used else None
        retry = frees + period + 1 - now if frees is not None else period + 1
    if not (allowed and cost):
        return allowed, limit, limit - after, newest + period + 1 if after else now, retry, nums
    kept = (units + [at] * cost)[-2 * limit:]
    return allowed, limit, limit - after, at + period + 1, 0, [at, held + cost, *kept]


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


_ALGORITHMS = {"fixed-window": _fixed, "sliding-window": _log, "sliding-window-approx": _approx,
               "token-bucket": _bucket, "gcra": _gcra}


def ttl_ms(request: RateRequest) -> int:
    """How long a key's state must outlive its last write (the approximate sliding window
    reads the previous window, the exact one serves clocks a period behind; a ban may
    outlast every tier)."""
    longest = max(tier.period_ms * (2 if tier.algorithm.startswith("sliding-window") else 1) for tier in request.tiers)
    if request.ban is not None:
        longest = max(longest, request.ban.window_ms, request.ban.duration_ms)
    return longest


def limits_of(state: State, tiers: tuple[Tier, ...]) -> list[int]:
    """Each tier's limit, or the key's override of it."""
    override = state.get("ov")
    if override and len(override) == len(tiers):
        return list(override)
    return [tier.limit for tier in tiers]


def _from_counts(state: State, tiers: tuple[Tier, ...], now: int) -> State | None:
    """The state with each exact sliding window that has no log yet started from the
    two-window counts kept under its period (what ``sliding-window`` kept before it was
    exact, what ``sliding-window-approx`` keeps): those units are logged at the latest
    time any of them can have been counted, so no window after the change holds more
    than the limit. The counts are dropped. None: nothing to start from."""
    new: State | None = None
    for tier in tiers:
        counts = Tier("sliding-window-approx", tier.limit, tier.period_ms).field
        if tier.algorithm != "sliding-window" or tier.field in state or counts not in state:
            continue
        window, current, previous = state[counts]
        new = dict(new or state)
        del new[counts]
        latest = min(max(now, window * tier.period_ms), (window + 1) * tier.period_ms - 1)
        units = current + previous
        if units and latest >= now - tier.period_ms:  # else every one of them is out of any window now
            new[tier.field] = [latest, units, *[latest] * units]
    return new


def step(state: State, request: RateRequest, now: int) -> tuple[RateAnswer, State | None]:
    """The answer to ``request`` at ``now`` and the key's new state (None: unchanged)."""
    ban = state.get("ban")
    if ban and ban[2] > now:
        first = request.tiers[0]
        return RateAnswer(False, first.limit, 0, ban[2], ban[2] - now, banned=True), None
    migrated = _from_counts(state, request.tiers, now)
    state = migrated or state
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
        return answer, migrated
    if allowed:
        new = dict(state)
        new.update({tier.field: outcome[5] for tier, outcome in zip(request.tiers, outcomes, strict=True)})
        return answer, new
    if request.ban is None:
        return answer, migrated
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
