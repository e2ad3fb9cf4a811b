"""The caches' data API for the board: every declared cache with its statistics, and
an operator's handle that invalidates without rewriting the definition."""

from __future__ import annotations

import time

import pytest

from oqronkit import Engine
from oqronkit.caches import declared_caches, open_cache
from oqronkit.errors import InvalidState
from oqronkit.namespaces import CACHE


def test_declared_caches_list_definitions_and_statistics(engine: Engine):
    profiles = engine.cache("profiles", ttl=60, tags=["users"], local=10)
    engine.cache("prices", ttl=5).set("p", 1)
    profiles.set("a", 1)
    profiles.get("a")
    profiles.get("a")
    profiles.get("missing")
    profiles.stats_counters.flush()
    found = {info.name: info for info in declared_caches(engine)}
    assert list(found) == ["prices", "profiles"]
    assert found["profiles"].definition["tags"] == ["users"] and found["profiles"].definition["local"] == 10
    assert found["profiles"].stats == {"hits": 2, "misses": 1, "stale": 0, "fetches": 0, "fetch_errors": 0}
    assert found["profiles"].hit_ratio == pytest.approx(2 / 3) and found["prices"].hit_ratio is None


def test_an_operators_handle_invalidates_every_l1_and_rewrites_nothing(engine: Engine):
    declared = engine.cache("profiles", ttl=60, local=10)
    declared.set("user:1:name", "Ada", tags=["org:7"])
    assert declared.get("user:1:name") == "Ada"
    engine.hot.kv_delete(declared.group, ["user:1:name"])
    assert declared.get("user:1:name") == "Ada"  # the worker's L1 holds it
    before = engine.durable.get(CACHE, "profiles")
    handle = open_cache(engine, "profiles")
    assert handle.ttl_ms == 60_000 and handle.local_size == 10
    handle.invalidate_tags("org:7")
    deadline = time.monotonic() + 5
    while declared.get("user:1:name") is not None:  # by message (memory, Redis) or local_ttl
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert engine.durable.get(CACHE, "profiles") == before
    with pytest.raises(InvalidState, match="nothing-here"):
        open_cache(engine, "nothing-here")
