"""Two processes hammering a rate limiter never get past its limit, on every hot plane
processes can share (the memory plane lives in one process): one key at one instant, and
several keys on the wall clock for a while, every window of the allowed checks' times read
back and counted."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

from oqronkit.backends.rate_types import ALGORITHMS, RateRequest, Tier
from oqronkit.backends.types import Scope
from oqronkit.clock import now_ms
from tests.engine.hot.conftest import SPAWN, make_hot
from tests.engine.hot.test_rate_windows import most_in_any_window

NOW = 1_700_000_000_000
KEYS, LIMIT, PERIOD_MS, RUN_S = 5, 20, 500, 2.5


def _hammer(open_plane: Any, url: str, names: tuple[str, str], algorithm: str, start, out) -> None:
    hot = open_plane(url)
    scope, request = Scope(*names), RateRequest("lim", "k", 1, (Tier(algorithm, 120, 60_000),))  # type: ignore[arg-type]
    hot.ensure_ready()
    start.wait(60)
    try:
        out.put(sum(hot.rate_hit(scope, request, NOW).allowed for _ in range(100)))
    finally:
        hot.close()


def _url(backend: str, hot: Any, request: pytest.FixtureRequest) -> str:
    """What a child process opens the same plane with."""
    if backend == "sqlite":
        return str(hot.path)
    if backend == "postgres":
        return str(request.getfixturevalue("pg_schema_url"))
    from tests.services import require_redis

    return require_redis()


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("backend", ["sqlite", "postgres", "redis"])
def test_two_processes_never_exceed_the_limit(backend, algorithm, request, tmp_path, scope_names):
    hot = make_hot(backend, request, tmp_path)
    hot.ensure_ready()
    url = _url(backend, hot, request)
    start, out = SPAWN.Barrier(2), SPAWN.Queue()
    children = [SPAWN.Process(target=_hammer, args=(type(hot), url, scope_names, algorithm, start, out))
                for _ in range(2)]
    for child in children:
        child.start()
    got = [out.get(timeout=60) for _ in children]
    for child in children:
        child.join(30)
        assert child.exitcode == 0
    hot.close()
    assert sum(got) == 120 and all(got)


def _hammer_on_the_clock(open_plane: Any, url: str, names: tuple[str, str], start, out) -> None:
    """Child process: check random keys on the wall clock for RUN_S seconds; report each
    allowed check's time (the ``now`` it was given) by key, and how many were refused."""
    hot = open_plane(url)
    scope, tiers = Scope(*names), (Tier("sliding-window", LIMIT, PERIOD_MS),)
    hot.ensure_ready()
    hot.rate_hit(scope, RateRequest("clock", "warm", 0, tiers), now_ms())  # connected before the race
    start.wait(60)
    allowed: dict[str, list[int]] = {f"k{i}": [] for i in range(KEYS)}
    refused, deadline = 0, time.monotonic() + RUN_S
    try:
        while time.monotonic() < deadline:
            key, at = f"k{random.randrange(KEYS)}", now_ms()
            if hot.rate_hit(scope, RateRequest("clock", key, 1, tiers), at).allowed:
                allowed[key].append(at)
            else:
                refused += 1
    finally:
        hot.close()
        out.put((allowed, refused))


@pytest.mark.parametrize("backend", ["sqlite", "postgres", "redis"])
def test_two_processes_on_several_keys_never_put_more_than_the_limit_in_any_window(backend, request, tmp_path,
                                                                                   scope_names):
    """20 per 500 ms, five keys, two processes on their own clocks for 2.5 s: no window of
    500 ms (ends included) of any key holds more than 20 of the checks allowed. The
    two-window counter ("sliding-window" before it was exact) let 24-38 through."""
    hot = make_hot(backend, request, tmp_path)
    hot.ensure_ready()
    url = _url(backend, hot, request)
    start, out = SPAWN.Barrier(2), SPAWN.Queue()
    children = [SPAWN.Process(target=_hammer_on_the_clock, args=(type(hot), url, scope_names, start, out))
                for _ in range(2)]
    for child in children:
        child.start()
    got = [out.get(timeout=90) for _ in children]
    for child in children:
        child.join(30)
        assert child.exitcode == 0
    hot.close()
    assert all(refused for _, refused in got), "both processes should have been held back"
    for key in (f"k{i}" for i in range(KEYS)):
        times = [at for allowed, _ in got for at in allowed[key]]
        assert len(times) >= LIMIT * RUN_S * 1000 / PERIOD_MS / 2, f"{key} was barely used"
        assert most_in_any_window([(at, 1) for at in times], PERIOD_MS) <= LIMIT, key
