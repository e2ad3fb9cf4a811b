"""``oqronkit.rate_limit`` on every mode: its definition record, checks and the calls that
steer a key, dry runs, and clear errors for bad input."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from oqronkit import Decision, Engine, OqronConfig, RateLimiter, Registry, classify_namespace
from oqronkit.ratelimit import InvalidRateKey, RateLimitConfigError

NOW = 1_700_000_000_000


def test_the_definition_is_a_ratelimit_record_written_on_first_use(engine: Engine):
    limiter = engine.rate_limit("login", limit=5, period=60, tiers=[(100, timedelta(hours=1))],
                                ban=(3, 600, 3600), fail_open=True)
    assert engine.durable.get("ratelimit", "login") is None
    assert limiter.check("alice", now=NOW).allowed
    value = engine.durable.get("ratelimit", "login").value
    assert classify_namespace("ratelimit") == "definition"
    assert value["algorithm"] == "sliding-window" and value["failOpen"] is True and value["dryRun"] is False
    assert value["tiers"] == [{"limit": 5, "periodMs": 60_000}, {"limit": 100, "periodMs": 3_600_000}]
    assert value["ban"] == {"strikes": 3, "windowMs": 600_000, "durationMs": 3_600_000}


def test_check_peek_reset_override_and_unban(engine: Engine):
    limiter = engine.rate_limit("api", algorithm="fixed-window", limit=2, period=1, ban=(1, 10, 60))
    first = limiter.check("k", now=NOW)
    assert isinstance(first, Decision) and (first.allowed, first.remaining, first.limit) == (True, 1, 2)
    assert limiter.peek("k", now=NOW).remaining == 1
    assert limiter.check("k", now=NOW).allowed
    refused = limiter.check("k", now=NOW + 1)
    assert not refused.allowed and refused.banned and refused.retry_after_seconds == 60
    assert limiter.check("k", now=NOW + 5000).banned
    limiter.unban("k")
    assert limiter.check("k", now=NOW + 5000).allowed
    limiter.override("k", 4, now=NOW + 5000)
    assert [limiter.check("k", now=NOW + 5000).allowed for _ in range(4)] == [True, True, True, False]
    limiter.reset("k")
    assert limiter.peek("k", now=NOW + 5000).remaining == 4  # counts and ban gone, override kept
    limiter.clear_override("k")
    assert limiter.peek("k", now=NOW + 5000).limit == 2


def test_dry_run_lets_everything_through_but_says_what_it_found(engine: Engine):
    limiter = engine.rate_limit("shadow", algorithm="token-bucket", limit=1, period=10, dry_run=True)
    assert limiter.check("k", now=NOW).allowed
    found = limiter.check("k", now=NOW)
    assert found.allowed and found.limited and found.retry_after == 10_000


def _memory_engine() -> Engine:
    return Engine(OqronConfig(mode="memory", database_url=None, project="p"), registry=Registry())


@pytest.mark.parametrize(("options", "message"), [
    ({"limit": 0, "period": 1}, "limit must be an integer from 1"),
    ({"limit": 5}, "give both limit and period"),
    ({"limit": 5, "period": 0}, "period must be from 1 ms to 31 days"),
    ({"limit": 5, "period": 86400 * 40}, "period must be from 1 ms to 31 days"),
    ({"limit": 5, "period": "1m"}, "must be seconds"),
    ({"limit": 5, "period": 1, "algorithm": "leaky"}, "algorithm must be one of"),
    ({"tiers": [(5, 1), (9, 1)]}, "two tiers have the same period"),
    ({"tiers": [5]}, "each tier is (limit, period)"),
    ({}, "give 1 to 8 tiers"),
    ({"limit": 5, "period": 1, "ban": (3, 10)}, "ban is (strikes, within, duration)"),
    ({"limit": 5, "period": 1, "dry_run": "yes"}, "dry_run must be True or False"),
])
def test_bad_declarations_say_what_is_wrong(options, message):
    with pytest.raises(RateLimitConfigError, match=re.escape(message)) as caught:
        RateLimiter("bad", engine=_memory_engine(), **options)
    assert isinstance(caught.value, ValueError)


def test_bad_keys_and_costs_say_what_is_wrong():
    limiter = RateLimiter("x", limit=3, period=1, engine=_memory_engine())
    for key in ("", None, "k" * 513):
        with pytest.raises(InvalidRateKey, match="a key must be a non-empty string"):
            limiter.check(key)  # type: ignore[arg-type]
    for cost in (0, 4, 1.5, True):
        with pytest.raises(InvalidRateKey, match="cost must be an integer from 1 to the smallest limit"):
            limiter.check("k", cost)  # type: ignore[arg-type]
    with pytest.raises(RateLimitConfigError, match="give 1 override limits"):
        limiter.override("k", [1, 2])
    with pytest.raises(RateLimitConfigError, match="name must be"):
        RateLimiter("", limit=1, period=1, engine=_memory_engine())


def test_a_non_declaring_handle_checks_and_steers_keys_but_never_rewrites_the_definition(engine: Engine):
    declared = RateLimiter("tool", limit=2, period=60, engine=engine)
    declared.check("k")
    before = engine.durable.get("ratelimit", "tool").value
    handle = RateLimiter("tool", limit=2, period=60, engine=engine, declares=False)
    assert handle.peek("k").remaining == 1  # the declared limiter's count, the peek counting nothing
    handle.reset("k")
    assert declared.peek("k").remaining == 2
    handle.unban("k")
    assert engine.durable.get("ratelimit", "tool").value == before
    assert RateLimiter("fresh", limit=1, period=1, engine=engine, declares=False).peek("x").remaining == 1
    assert engine.durable.get("ratelimit", "fresh") is None


def test_a_limiter_binds_its_check_again_when_the_engine_reopens_its_hot_plane(engine: Engine, mode: str):
    limiter = engine.rate_limit("reopen", algorithm="fixed-window", limit=5, period=60)
    assert limiter.check("k", now=NOW).remaining == 4
    engine.close()  # the next use opens new planes; the check bound to the closed one must not be kept
    # The memory plane's counts went with it; every other plane keeps them.
    assert limiter.check("k", now=NOW).remaining == (4 if mode == "memory" else 3)
