"""The hot plane's rate-limit primitive: every backend passes these tests unchanged
(exact boundaries, clock edges on an explicit clock, tiers all-or-nothing, bans,
overrides, concurrency)."""

from __future__ import annotations

import threading

import pytest

from oqronkit.backends.rate_types import ALGORITHMS, Ban, RateRequest, Tier
from oqronkit.backends.types import Scope

NOW = 1_700_000_000_000  # a multiple of every period below: window starts are exact


def req(*tiers: tuple[str, int, int], key: str = "k", cost: int = 1, ban: Ban | None = None) -> RateRequest:
    return RateRequest("lim", key, cost, tuple(Tier(alg, limit, period) for alg, limit, period in tiers), ban)  # type: ignore[arg-type]


def allowed(hot, scope, request, now=NOW) -> bool:
    return hot.rate_hit(scope, request, now).allowed


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_exactly_the_limit_is_allowed_at_one_instant(hot, scope, algorithm):
    r = req((algorithm, 3, 1000))
    answers = [hot.rate_hit(scope, r, NOW) for _ in range(4)]
    assert [a.allowed for a in answers] == [True, True, True, False]
    assert [a.remaining for a in answers] == [2, 1, 0, 0]
    assert answers[3].retry_after > 0 and answers[3].limit == 3


def test_fixed_window_boundary_is_exact(hot, scope):
    r = req(("fixed-window", 2, 1000))
    assert allowed(hot, scope, r) and allowed(hot, scope, r, NOW + 10)
    denied = hot.rate_hit(scope, r, NOW + 999)
    assert not denied.allowed and denied.retry_after == 1 and denied.reset == NOW + 1000
    assert allowed(hot, scope, r, NOW + 1000)


def test_sliding_window_counts_each_unit_until_a_period_after_it(hot, scope):
    r = req(("sliding-window", 3, 1000))
    for at in (0, 100, 200):
        assert allowed(hot, scope, r, NOW + at)
    at_edge = hot.rate_hit(scope, r, NOW + 1000)  # the unit at NOW is a period old: still in the window
    assert (at_edge.allowed, at_edge.remaining, at_edge.retry_after, at_edge.reset) == (False, 0, 1, NOW + 1201)
    after = hot.rate_hit(scope, r, NOW + 1001)
    assert (after.allowed, after.remaining, after.reset) == (True, 0, NOW + 2002)
    refused = hot.rate_hit(scope, r, NOW + 1050)
    assert not refused.allowed and refused.retry_after == 1101 - 1050  # the unit at NOW + 100 goes next
    assert hot.rate_hit(scope, req(("sliding-window", 3, 1000), cost=0), NOW + 1201).remaining == 2


def test_sliding_window_retry_after_is_when_it_would_pass(hot, scope):
    r, two = req(("sliding-window", 4, 1000)), req(("sliding-window", 4, 1000), cost=2)
    for at in (0, 10, 20, 30):
        assert allowed(hot, scope, r, NOW + at)
    denied = hot.rate_hit(scope, two, NOW + 300)  # two units must go: the second oldest, at NOW + 10
    assert not denied.allowed and denied.retry_after == 1011 - 300 and denied.remaining == 0
    assert not allowed(hot, scope, two, NOW + 300 + denied.retry_after - 1)
    assert allowed(hot, scope, two, NOW + 300 + denied.retry_after)


def test_a_lagging_clock_counts_sliding_window_units_from_its_own_edge(hot, scope):
    r = req(("sliding-window", 2, 1000))
    assert allowed(hot, scope, r, NOW)
    assert allowed(hot, scope, r, NOW + 1500)  # NOW has left this clock's window
    # Another process's clock, 600 ms behind: its window [NOW - 100, NOW + 900] still holds NOW.
    lagging = hot.rate_hit(scope, r, NOW + 900)
    assert not lagging.allowed and lagging.retry_after == 101
    assert allowed(hot, scope, r, NOW + 1001)  # logged at NOW + 1500, where the log is
    assert not allowed(hot, scope, r, NOW + 2500)  # both units at NOW + 1500 count until NOW + 2501
    assert allowed(hot, scope, r, NOW + 2501)


def test_the_approximate_sliding_window_weights_the_previous_window(hot, scope):
    r = req(("sliding-window-approx", 10, 1000))
    assert all(allowed(hot, scope, r) for _ in range(10))
    at_edge = hot.rate_hit(scope, r, NOW + 1000)  # the previous 10 still weigh fully
    assert not at_edge.allowed and at_edge.retry_after == 1
    assert allowed(hot, scope, r, NOW + 1001)  # 10 * 999 // 1000 = 9 used
    assert not allowed(hot, scope, r, NOW + 1001)
    assert hot.rate_hit(scope, r, NOW + 1500).remaining == 3  # 5 weighted + 1 counted + this one
    assert hot.rate_hit(scope, r, NOW + 2999).allowed  # two windows on, only the last weighs


def test_the_approximate_sliding_window_retry_after_is_when_it_would_pass(hot, scope):
    r = req(("sliding-window-approx", 4, 1000))
    for _ in range(4):
        assert allowed(hot, scope, r, NOW + 200)
    denied = hot.rate_hit(scope, r, NOW + 300)  # only next window: 4 weighs until 1/4 has passed
    assert not denied.allowed
    assert not allowed(hot, scope, r, NOW + 300 + denied.retry_after - 1)
    assert allowed(hot, scope, r, NOW + 300 + denied.retry_after)


@pytest.mark.parametrize("at", [500, 1200, 2500])
def test_the_exact_window_starts_from_the_counts_it_kept_before(hot, scope, at):
    """A key counted by the two-window counter ("sliding-window" before it was exact, now
    "sliding-window-approx", under the same state) is held to the limit when its limiter
    becomes exact: the old units are logged at the latest time they can have been counted."""
    approx, exact = req(("sliding-window-approx", 5, 1000)), req(("sliding-window", 5, 1000))
    for _ in range(3):
        assert allowed(hot, scope, approx, NOW + 900)
    # Three units, logged at min(max(now, NOW), NOW + 999): still counted up to a period after that.
    latest = min(NOW + at, NOW + 999)
    first = hot.rate_hit(scope, exact, NOW + at)
    if at >= 2000:  # out of every window by then: the counts are dropped
        assert first.allowed and first.remaining == 4
        return
    assert first.allowed and first.remaining == 1
    assert allowed(hot, scope, exact, NOW + at) and not allowed(hot, scope, exact, NOW + at)
    assert hot.rate_hit(scope, req(("sliding-window", 5, 1000), cost=0), latest + 1000).remaining == 0
    # Then they go; the two checked at NOW + at go with them when logged at the same time.
    left = hot.rate_hit(scope, req(("sliding-window", 5, 1000), cost=0), latest + 1001).remaining
    assert left == (5 if latest == NOW + at else 3)


def test_a_peek_starts_the_exact_log_from_old_counts_once(hot, scope):
    approx = req(("sliding-window-approx", 5, 1000))
    peek, exact = req(("sliding-window", 5, 1000), cost=0), req(("sliding-window", 5, 1000))
    assert allowed(hot, scope, approx, NOW + 100) and allowed(hot, scope, approx, NOW + 100)
    assert hot.rate_hit(scope, peek, NOW + 200).remaining == 3
    assert hot.rate_hit(scope, peek, NOW + 300).remaining == 3  # logged at NOW + 200 by the first
    assert hot.rate_hit(scope, exact, NOW + 1201).remaining == 4


def test_a_reset_forgets_the_exact_log(hot, scope):
    r = req(("sliding-window", 2, 1000))
    assert allowed(hot, scope, r) and allowed(hot, scope, r) and not allowed(hot, scope, r)
    hot.rate_drop(scope, "lim", "k", [r.tiers[0].field])
    assert allowed(hot, scope, r) and allowed(hot, scope, r) and not allowed(hot, scope, r)


def test_token_bucket_refills_continuously(hot, scope):
    r = req(("token-bucket", 2, 1000))
    assert allowed(hot, scope, r) and allowed(hot, scope, r)
    denied = hot.rate_hit(scope, r, NOW)
    assert not denied.allowed and denied.retry_after == 500
    assert not allowed(hot, scope, r, NOW + 499)
    assert allowed(hot, scope, r, NOW + 500)


def test_gcra_spaces_requests_by_the_emission_interval(hot, scope):
    r = req(("gcra", 2, 1000))
    assert allowed(hot, scope, r) and allowed(hot, scope, r)
    denied = hot.rate_hit(scope, r, NOW)
    assert not denied.allowed and denied.retry_after == 500
    assert not allowed(hot, scope, r, NOW + 499)
    assert allowed(hot, scope, r, NOW + 500)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_cost_takes_several_units_or_none(hot, scope, algorithm):
    assert allowed(hot, scope, req((algorithm, 3, 1000), cost=2))
    assert not allowed(hot, scope, req((algorithm, 3, 1000), cost=2))
    assert allowed(hot, scope, req((algorithm, 3, 1000), cost=1))


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_peek_counts_nothing(hot, scope, algorithm):
    r, peek = req((algorithm, 2, 1000)), req((algorithm, 2, 1000), cost=0)
    assert hot.rate_hit(scope, peek, NOW).remaining == 2
    assert allowed(hot, scope, r)
    assert [hot.rate_hit(scope, peek, NOW).remaining for _ in range(3)] == [1, 1, 1]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_tiers_are_all_or_nothing(hot, scope, algorithm):
    r = req((algorithm, 1, 1000), (algorithm, 2, 100_000))
    assert allowed(hot, scope, r)
    assert not allowed(hot, scope, r, NOW + 1)  # refused by the short tier: the long one keeps 1 left
    assert allowed(hot, scope, r, NOW + 2000)
    refused = hot.rate_hit(scope, r, NOW + 4000)  # now the long tier binds
    assert not refused.allowed and refused.limit == 2 and refused.tier == 1
    assert hot.rate_hit(scope, r, NOW + 4000 + 100_000).tier == 0  # both fresh: the short tier has least room


def test_a_lagging_clock_never_reopens_a_closed_window(hot, scope):
    r = req(("fixed-window", 1, 1000))
    assert allowed(hot, scope, r, NOW + 1000)
    assert not allowed(hot, scope, r, NOW + 999)  # another process's clock, 1 ms behind


@pytest.mark.parametrize("algorithm", ["token-bucket", "gcra"])
def test_a_lagging_clock_refills_nothing(hot, scope, algorithm):
    r = req((algorithm, 1, 1000))
    assert allowed(hot, scope, r, NOW + 5000)
    assert not allowed(hot, scope, r, NOW)


def test_keys_and_scopes_are_separate(hot, scope):
    r = req(("fixed-window", 1, 1000))
    assert allowed(hot, scope, r)
    assert allowed(hot, scope, req(("fixed-window", 1, 1000), key="other"))
    assert allowed(hot, Scope(scope.project, scope.environment + "x"), r)
    assert not allowed(hot, scope, r)


def test_a_key_is_banned_after_repeated_refusals_and_unbanned(hot, scope):
    r = req(("fixed-window", 1, 1000), ban=Ban(strikes=2, window_ms=10_000, duration_ms=5000))
    assert allowed(hot, scope, r)
    assert not hot.rate_hit(scope, r, NOW + 1).banned
    struck = hot.rate_hit(scope, r, NOW + 2)  # the second strike starts the ban
    assert not struck.allowed and struck.banned and struck.retry_after == 5000 and struck.reset == NOW + 5002
    banned = hot.rate_hit(scope, r, NOW + 1000)  # a fresh window, but the key is banned
    assert not banned.allowed and banned.banned and banned.retry_after == 5000 - 998
    assert allowed(hot, scope, r, NOW + 5002)  # the ban is over
    assert not allowed(hot, scope, r, NOW + 5003) and not allowed(hot, scope, r, NOW + 5004)
    assert hot.rate_hit(scope, r, NOW + 6000).banned
    hot.rate_drop(scope, "lim", "k", ["ban"])
    assert allowed(hot, scope, r, NOW + 6000)


def test_strikes_outside_the_ban_window_do_not_add_up(hot, scope):
    r = req(("fixed-window", 1, 1000), ban=Ban(strikes=2, window_ms=500, duration_ms=5000))
    assert allowed(hot, scope, r)
    assert not allowed(hot, scope, r, NOW + 1)
    assert allowed(hot, scope, r, NOW + 1000)
    assert not allowed(hot, scope, r, NOW + 1001)  # first strike of a new ban window
    assert not hot.rate_hit(scope, r, NOW + 2000).banned


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_an_override_replaces_the_limits_of_one_key(hot, scope, algorithm):
    r = req((algorithm, 1, 1000))
    hot.rate_override(scope, "lim", "k", [3], ttl_ms=60_000, now=NOW)
    answers = [hot.rate_hit(scope, r, NOW) for _ in range(4)]
    assert [a.allowed for a in answers] == [True, True, True, False] and answers[0].limit == 3
    assert allowed(hot, scope, req((algorithm, 1, 1000), key="other"))
    hot.rate_drop(scope, "lim", "k", ["ov"])
    assert not allowed(hot, scope, r, NOW + 1)


def test_reset_forgets_counts_and_ban_but_keeps_the_override(hot, scope):
    r = req(("fixed-window", 1, 1000), ban=Ban(strikes=1, window_ms=1000, duration_ms=9000))
    hot.rate_override(scope, "lim", "k", [2], ttl_ms=60_000, now=NOW)
    assert allowed(hot, scope, r) and allowed(hot, scope, r)
    assert hot.rate_hit(scope, r, NOW + 1).banned
    hot.rate_drop(scope, "lim", "k", [r.tiers[0].field, "ban"])
    assert allowed(hot, scope, r, NOW + 3) and allowed(hot, scope, r, NOW + 3)
    assert not allowed(hot, scope, r, NOW + 3)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_twenty_threads_never_exceed_the_limit(hot, scope, algorithm):
    r = req((algorithm, 50, 60_000), (algorithm, 60, 600_000))
    wins: list[bool] = []
    start = threading.Barrier(20)

    def hammer() -> None:
        start.wait(10)
        mine = [hot.rate_hit(scope, r, NOW).allowed for _ in range(10)]
        wins.extend(mine)

    threads = [threading.Thread(target=hammer) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(wins) == 200 and sum(wins) == 50
