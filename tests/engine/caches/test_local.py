"""The L1: it serves without the hot plane, and tag and prefix invalidations reach
another process's L1 (by message where the plane broadcasts: memory, Postgres, Redis;
within ``local_ttl`` on SQLite)."""

from __future__ import annotations

import multiprocessing
import time
from typing import Any

from oqronkit import Engine
from oqronkit.config import OqronConfig
from oqronkit.queues.queue import Registry

SPAWN = multiprocessing.get_context("spawn")
BROADCASTS = {"memory", "postgres", "redis", "redis-postgres"}


def poll(read, expected, timeout=5.0) -> float:
    """Seconds until ``read()`` returns ``expected``; fails after ``timeout``."""
    started = time.monotonic()
    while (value := read()) != expected:
        assert time.monotonic() - started < timeout, f"still {value!r}, expected {expected!r}"
        time.sleep(0.01)
    return time.monotonic() - started


def test_the_l1_serves_without_the_hot_plane_and_drops_this_processs_invalidations(engine: Engine):
    c = engine.cache("l1", ttl=60, local=2)
    for key in ("user:1:a", "user:2:a", "b"):
        c.set(key, key, tags=["t"] if key == "b" else ())
    assert c.get("user:1:a") == "user:1:a" and c.get("b") == "b"
    engine.hot.kv_delete(c.group, ["user:1:a", "b"])  # behind the cache's back
    assert c.get("user:1:a") == "user:1:a" and c.get("b") == "b"  # from the L1
    assert c.get("user:2:a") == "user:2:a"  # a third entry: the L1 holds two, user:1:a goes
    assert c.get("user:1:a") is None
    c.invalidate_tags("t")
    assert c.get("b") is None
    c.set("user:3:x", 3)
    assert c.get("user:3:x") == 3
    engine.hot.kv_delete(c.group, ["user:3:x"])
    c.invalidate_prefix("user:3:")
    assert c.get("user:3:x") is None
    assert c.local is not None and c.local.hits == 2


def _reader(config: OqronConfig, local_ttl: float | None, commands, replies) -> None:
    """Child process: a cache with an L1; answers ("get", key) until told to stop."""
    engine = Engine(config, registry=Registry())
    try:
        c = engine.cache("shared", ttl=60, local=100, local_ttl=local_ttl)
        c.read(["warm-up"])
        if c.local is not None and engine.hot.supports_broadcast:
            assert c.local.usable or poll(lambda: c.local.usable, True) >= 0
        replies.put("ready")
        while (command := commands.get(timeout=60)) != "stop":
            replies.put(c.get(command[1]))
    finally:
        engine.close()


class Reader:
    def __init__(self, engine: Engine, local_ttl: float | None) -> None:
        self.commands, self.replies = SPAWN.Queue(), SPAWN.Queue()
        self.child = SPAWN.Process(target=_reader, args=(engine.config, local_ttl, self.commands, self.replies))
        self.child.start()
        assert self.replies.get(timeout=60) == "ready"

    def get(self, key: str) -> Any:
        self.commands.put(("get", key))
        return self.replies.get(timeout=30)

    def stop(self) -> None:
        self.commands.put("stop")
        self.child.join(30)
        assert self.child.exitcode == 0


def test_tag_and_prefix_invalidation_reach_another_processs_l1(engine: Engine, mode: str):
    c = engine.cache("shared", ttl=60, local=100, local_ttl=None if mode in BROADCASTS else 0.5)
    c.set("user:1:name", "Ada", tags=["users"])
    c.set("user:2:name", "Bob")
    if mode == "memory":  # one process holds the planes: a second cache object stands in
        other = Engine.cache(engine, "shared", ttl=60, local=100)
        get = other.get
    else:
        reader = Reader(engine, None if mode in BROADCASTS else 0.5)
        get = reader.get
    try:
        assert get("user:1:name") == "Ada" and get("user:2:name") == "Bob"
        engine.hot.kv_delete(c.group, ["user:1:name", "user:2:name"])  # only the L1 has them now
        assert get("user:1:name") == "Ada" and get("user:2:name") == "Bob"
        c.invalidate_tags("users")
        took = poll(lambda: get("user:1:name"), None)
        assert get("user:2:name") == "Bob" or mode not in BROADCASTS  # only the tag's entries go
        c.invalidate_prefix("user:2:")
        took = max(took, poll(lambda: get("user:2:name"), None))
        assert took < (1.0 if mode in BROADCASTS else 2.0)
    finally:
        if mode != "memory":
            reader.stop()
