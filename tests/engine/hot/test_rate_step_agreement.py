"""Every hot plane answers rate-limit checks as backends/rate_step.py does, check by check,
on random sequences: one tier without bans (Redis' common path), one tier with a ban, several
tiers at once; refusals, retry_after, peeks, costs above one, a lagging clock, overrides
set and dropped, and clocks near 2^52 ms (numbers the planes must keep exact)."""

from __future__ import annotations

import random

import pytest

from oqronkit.backends.rate_step import State, step
from oqronkit.backends.rate_types import ALGORITHMS, Ban, RateRequest, Tier
from oqronkit.backends.types import Scope

ALIGNED = 1_700_000_000_000
LARGE = 4_000_000_000_123_457  # above 1e15, where Lua's default number text turns to 4e+15
PERIODS = (1000, 2500, 60_000)
OVERRIDE_TTL_MS = 10 * 86_400_000  # outlives every sequence: no plane forgets an override here


def random_request(rng: random.Random, key: str) -> RateRequest:
    shape = rng.choice(["one tier", "one tier", "one tier, banned", "tiers"])
    count = rng.randint(2, 3) if shape == "tiers" else 1
    fields: dict[str, Tier] = {}
    while len(fields) < count:
        tier = Tier(rng.choice(ALGORITHMS), rng.randint(1, 5), rng.choice(PERIODS))
        fields.setdefault(tier.field, tier)
    ban = None
    if shape != "one tier" and rng.random() < 0.7:
        ban = Ban(rng.randint(1, 3), rng.choice([500, 3000]), rng.choice([1000, 4000]))
    return RateRequest("agree", key, 1, tuple(fields.values()), ban)


def run_sequence(hot, scope: Scope, seed: int, start: int, checks: int = 45) -> int:
    """Runs ``checks`` random operations on one key; returns how many checks were refused."""
    rng = random.Random(seed)
    key = f"k{seed}"
    request = random_request(rng, key)
    state: State = {}
    now, refused = start + rng.randint(0, 59_999), 0
    for i in range(checks):
        now += rng.choice([0, 0, 1, 7, 120, 450, 999, 1000]) - (300 if rng.random() < 0.1 else 0)
        roll = rng.random()
        if roll < 0.06:
            limits = [rng.randint(1, 6) for _ in request.tiers]
            hot.rate_override(scope, "agree", key, limits, ttl_ms=OVERRIDE_TTL_MS, now=now)
            state = {**state, "ov": limits}
            continue
        if roll < 0.09:
            dropped = rng.choice([["ov"], ["ban"], [tier.field for tier in request.tiers]])
            hot.rate_drop(scope, "agree", key, dropped)
            state = {field: value for field, value in state.items() if field not in dropped}
            continue
        cost = rng.choice([0, 1, 1, 1, 1, 2, 3])
        checked = RateRequest(request.name, key, cost, request.tiers, request.ban)
        expected, new = step(state, checked, now)
        assert hot.rate_hit(scope, checked, now) == expected, (seed, i, checked, state, now)
        state = new if new is not None else state
        refused += not expected.allowed
    return refused


@pytest.mark.parametrize("seed", range(12))
def test_random_checks_answer_as_rate_step(hot, scope, seed):
    assert run_sequence(hot, scope, seed, ALIGNED) > 0  # refusals, not only the allowing path


@pytest.mark.parametrize("seed", range(100, 104))
def test_random_checks_on_a_clock_near_2_to_the_52_answer_as_rate_step(hot, scope, seed):
    run_sequence(hot, scope, seed, LARGE)


@pytest.mark.parametrize("seed", range(300, 306))
def test_long_exact_logs_answer_as_rate_step(hot, scope, seed):
    """The exact sliding window on logs of tens of units: its searches gallop and halve
    over them (a burst leaving at once, clocks up to two periods behind, costs up to 5)."""
    rng = random.Random(seed)
    tiers = (Tier("sliding-window", rng.randint(30, 120), 1000),)
    state: State = {}
    now, refused = ALIGNED, 0
    for i in range(250):
        now += rng.choice([0, 0, 1, 1, 2, 3, 5, 9]) if rng.random() < 0.97 else rng.choice([400, 1001])
        at = now - (rng.randint(0, 2000) if rng.random() < 0.15 else 0)
        checked = RateRequest("long", f"long{seed}", rng.choice([0, 1, 1, 2, 5]), tiers)
        expected, new = step(state, checked, at)
        assert hot.rate_hit(scope, checked, at) == expected, (seed, i, at)
        state = new if new is not None else state
        refused += not expected.allowed
    assert refused > 0
