"""The cache (oqronkit.caches) on every hot plane: entries, TTL and jitter, stale
windows, generations (tag, prefix, clear), negative entries and the fetch lock run
unchanged against memory, SQLite, Postgres and Redis, with a fake clock."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import pytest

from oqronkit import open_durable
from oqronkit.caches import Cache, InvalidCacheKey, InvalidCacheValue
from oqronkit.config import OqronConfig
from oqronkit.durable import DurablePlane
from oqronkit.errors import ConfigurationError
from oqronkit.hot import HotPlaneFacade
from oqronkit.queues.queue import Registry

NOW = 1_700_000_000_000


@dataclass
class Host:
    """What a cache needs from an engine: the hot plane under test, a memory durable plane."""

    hot: HotPlaneFacade
    durable: DurablePlane
    config: OqronConfig
    registry: Registry = field(default_factory=Registry)


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def host(hot, scope):
    config = OqronConfig(mode="memory", database_url=None, project=scope.project)
    durable = open_durable(config)
    yield Host(HotPlaneFacade(hot, project=scope.project, environment=scope.environment), durable, config)
    durable.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()


def make(host, clock, name="c", **options) -> Cache:
    options.setdefault("ttl", 10)
    options.setdefault("ttl_jitter", 0)
    return Cache(name, engine=host, clock=clock, **options)


def test_set_get_delete_and_get_many(host, clock):
    c = make(host, clock)
    assert c.get("a") is None and c.get("a", 7) == 7
    c.set("a", {"x": [1, 2]})
    c.set("b", "two")
    c.set("n", None)
    assert c.get("a") == {"x": [1, 2]} and c.get("n", 7) is None
    assert c.get_many(["a", "b", "zz", "a"]) == {"a": {"x": [1, 2]}, "b": "two"}
    c.delete("a", "missing")
    assert c.get("a") is None and c.get("b") == "two"


def test_kv_prune_drops_only_lapsed_keys(hot, scope):
    hot.kv_set(scope, "g", {"a": "1", "b": "2"}, ttl_ms=1_000, now=NOW)
    hot.kv_set(scope, "g", {"c": "3"}, ttl_ms=5_000, now=NOW)
    hot.kv_set(scope, "other", {"a": "1"}, ttl_ms=1_000, now=NOW)
    assert hot.kv_prune(scope, "g", NOW + 999) == 0
    assert hot.kv_prune(scope, "g", NOW + 1_000) == 2
    assert hot.kv_prune(scope, "g", NOW + 1_000) == 0
    assert hot.kv_get(scope, "g", ["a", "b", "c"], NOW) == {"c": "3"}
    assert hot.kv_get(scope, "other", ["a"], NOW) == {"a": "1"}


def test_a_cache_prunes_its_lapsed_entries_as_it_writes(host, clock):
    c = make(host, clock, ttl=1)
    c.set("old", 1)
    clock.now += 61_000
    c.set("new", 2)  # the first write past the prune interval drops "old"
    assert host.hot.kv_prune(c.group, clock.now + 10_000) == 1  # only "new" was left


def test_entries_expire_at_their_ttl(host, clock):
    c = make(host, clock)
    c.set("a", 1)
    c.set("b", 2, ttl=30)
    clock.now += 9_999
    assert c.get("a") == 1
    clock.now += 1
    assert c.get("a") is None and c.get("b") == 2
    clock.now += 20_000
    assert c.get("b") is None


def test_jitter_shortens_the_ttl_by_at_most_its_fraction(host, clock):
    c = make(host, clock, ttl_jitter=0.5)
    for i in range(20):
        c.set(f"k{i}", i)
    clock.now += 4_999
    assert len(c.get_many([f"k{i}" for i in range(20)])) == 20
    clock.now += 5_001
    assert c.get_many([f"k{i}" for i in range(20)]) == {}


def test_caches_and_scopes_do_not_share_entries(host, clock):
    make(host, clock, name="one").set("a", 1)
    assert make(host, clock, name="two").get("a") is None


def test_invalid_values_and_keys_raise_and_write_nothing(host, clock):
    c = make(host, clock, max_value_bytes=100)
    with pytest.raises(InvalidCacheValue, match="over max_value_bytes"):
        c.set("a", "x" * 200)
    with pytest.raises(InvalidCacheValue, match="not JSON"):
        c.set("a", {1, 2})
    with pytest.raises(InvalidCacheValue, match="cannot be stored"):
        c.set("a", "nul\x00")
    with pytest.raises(InvalidCacheKey):
        c.set("", 1)
    with pytest.raises(InvalidCacheKey):
        c.get("k" * 600)
    with pytest.raises(ConfigurationError, match="prefix"):
        c.invalidate_prefix("user")
    assert c.get("a") is None


def test_tag_invalidation_without_touching_entries(host, clock):
    c = make(host, clock, tags=["all"])
    c.set("a", 1, tags=["t1"])
    c.set("b", 2, tags=["t2"])
    c.set("c", 3)
    c.invalidate_tags("t1")
    assert c.get_many(["a", "b", "c"]) == {"b": 2, "c": 3}
    c.set("a", 11, tags=["t1"])  # written after the invalidation: valid again
    assert c.get("a") == 11
    c.invalidate_tags("all")
    assert c.get_many(["a", "b", "c"]) == {}


def test_prefix_invalidation_and_clear(host, clock):
    c = make(host, clock)
    for key in ("user:1:name", "user:1:mail", "user:2:name", "user:10:name", "org:1"):
        c.set(key, key)
    c.invalidate_prefix("user:1:")
    assert set(c.get_many(["user:1:name", "user:1:mail", "user:2:name", "user:10:name", "org:1"])) == {
        "user:2:name", "user:10:name", "org:1"}
    c.invalidate_prefix("user:")
    assert set(c.get_many(["user:2:name", "user:10:name", "org:1"])) == {"org:1"}
    c.clear()
    assert c.get("org:1") is None


def test_get_or_fetch_fetches_once_then_hits(host, clock):
    calls: list[str] = []
    c = make(host, clock, fetcher=lambda key: calls.append(key) or {"k": key})
    assert c.get_or_fetch("a") == {"k": "a"} and c.get_or_fetch("a") == {"k": "a"}
    assert calls == ["a"]
    assert c.stats() == {"hits": 1, "misses": 1, "stale": 0, "fetches": 1, "fetch_errors": 0}


def test_stale_while_revalidate_serves_stale_and_refreshes_in_the_background(host, clock):
    versions = iter(range(1, 100))
    refreshed = threading.Event()

    def fetcher(key):
        value = next(versions)
        if value > 1:
            refreshed.set()
        return value

    c = make(host, clock, stale_while_revalidate=5, fetcher=fetcher)
    assert c.get_or_fetch("a") == 1
    clock.now += 12_000  # past the ttl, inside the swr window
    assert c.get("a") is None  # get() serves only fresh values
    assert c.get_or_fetch("a") == 1  # stale, at once
    assert refreshed.wait(10)
    for _ in range(200):
        if c.get("a") == 2:
            break
        threading.Event().wait(0.01)
    assert c.get_or_fetch("a") == 2
    for _ in range(200):  # the refresh has landed: a call joining it would get its value
        if not c.flights.busy("a"):
            break
        threading.Event().wait(0.01)
    clock.now += 16_000  # past ttl + swr: a blocking fetch
    assert c.get_or_fetch("a") == 3
    assert c.stats()["stale"] == 1


def test_stale_if_error_serves_the_old_value_within_its_window(host, clock):
    fail = [False]

    def fetcher(key):
        if fail[0]:
            raise RuntimeError("origin down")
        return "v1"

    c = make(host, clock, stale_if_error=30, fetcher=fetcher)
    assert c.get_or_fetch("a") == "v1"
    fail[0] = True
    clock.now += 20_000
    assert c.get_or_fetch("a") == "v1"
    clock.now += 25_000  # past ttl + stale_if_error
    with pytest.raises(RuntimeError, match="origin down"):
        c.get_or_fetch("a")
    stats = c.stats()
    assert stats["fetch_errors"] == 2 and stats["stale"] == 1


def test_negative_ttl_caches_not_found(host, clock):
    calls: list[str] = []
    c = make(host, clock, negative_ttl=2, fetcher=lambda key: calls.append(key))
    assert c.get_or_fetch("gone") is None and c.get_or_fetch("gone") is None
    assert calls == ["gone"]
    clock.now += 2_000
    assert c.get_or_fetch("gone") is None and calls == ["gone", "gone"]
    plain = make(host, clock, name="plain", fetcher=lambda key: calls.append(key))
    plain.get_or_fetch("x")
    plain.get_or_fetch("x")
    assert calls.count("x") == 2  # without negative_ttl, None is never cached


def test_a_fetch_overlapping_an_invalidation_writes_a_dead_entry(host, clock):
    c = make(host, clock, tags=["t"])

    def fetcher(key):
        c.invalidate_tags("t")  # lands while the (old) value is being fetched
        return "old"

    assert c.get_or_fetch("a", fetcher) == "old"
    assert c.get("a") is None


def test_fetch_lock_held_elsewhere_serves_stale_or_waits(host, clock):
    c = make(host, clock, stale_if_error=30, fetch_lock_ttl=2)
    c.set("a", "old")
    clock.now += 15_000
    assert host.hot.acquire_lock("cache:c:fetch:a", "other", ttl_ms=2_000, now=clock.now)
    assert c.get_or_fetch("a", lambda key: "new") == "old"  # another process fetches: stale now
    assert host.hot.acquire_lock("cache:c:fetch:b", "other", ttl_ms=2_000, now=clock.now)
    done: list[object] = []
    waiter = threading.Thread(target=lambda: done.append(c.get_or_fetch("b", lambda key: "mine")))
    waiter.start()
    threading.Event().wait(0.05)
    c.set("b", "theirs")  # the other process's fetch lands
    waiter.join(5)
    assert done == ["theirs"]


def test_kv_get_with_counters_reads_both_at_once(hot, scope):
    hot.kv_set(scope, "g", {"a": "1", "b": "2"}, ttl_ms=1_000, now=NOW)
    hot.incr(scope, "n1", 3)
    assert hot.kv_get_with_counters(scope, "g", ["a", "zz"], ["n1", "n2"], NOW) == ({"a": "1"}, {"n1": 3, "n2": 0})
    assert hot.kv_get_with_counters(scope, "g", ["a"], [], NOW + 1_000) == ({}, {})
    assert hot.kv_get_with_counters(scope, "g", [], ["n1"], NOW) == ({}, {"n1": 3})


def test_a_waiter_with_nothing_stale_gives_up_after_the_fetch_lock_ttl(host, clock):
    from oqronkit.caches import FetchTimeout

    c = make(host, clock, fetch_lock_ttl=0.2)
    assert host.hot.acquire_lock("cache:c:fetch:k", "other", ttl_ms=60_000, now=clock.now)
    with pytest.raises(FetchTimeout, match="fetch_lock_ttl"):
        c.get_or_fetch("k", lambda key: "never")
