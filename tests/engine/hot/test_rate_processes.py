"""Two processes hammering one key of a rate limiter never get past its limit, on every
hot plane processes can share (the memory plane lives in one process)."""

from __future__ import annotations

from typing import Any

import pytest

from oqronkit.backends.rate_types import RateRequest, Tier
from oqronkit.backends.types import Scope
from tests.engine.hot.conftest import SPAWN, make_hot

NOW = 1_700_000_000_000
ALGORITHMS = ["fixed-window", "sliding-window", "token-bucket", "gcra"]


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
