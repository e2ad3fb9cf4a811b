"""The cache on each of the five engine modes: its definition record, and one fetch
per cold key when 50 callers in two processes ask at once."""

from __future__ import annotations

import multiprocessing
import threading
import time

import oqronkit
from oqronkit import Engine
from oqronkit.config import OqronConfig
from oqronkit.namespaces import CACHE, classify_namespace
from oqronkit.queues.queue import Registry

SPAWN = multiprocessing.get_context("spawn")
CALLERS = 50


def test_the_definition_is_recorded_once_per_process(engine: Engine):
    c = engine.cache("profiles", ttl=60, stale_while_revalidate=10, tags=["users"], negative_ttl=5)
    c.set("user:1", {"name": "Ada"})
    assert c.get("user:1") == {"name": "Ada"}
    record = engine.durable.get(CACHE, "profiles")
    assert record is not None and classify_namespace(CACHE) == "definition"
    assert record.value["ttlMs"] == 60_000 and record.value["staleWhileRevalidateMs"] == 10_000
    assert record.value["tags"] == ["users"] and record.value["negativeTtlMs"] == 5_000
    assert engine.durable.count(CACHE) == 1


def test_entries_are_hot_only(engine: Engine):
    c = engine.cache("hot-only", ttl=60)
    c.set("k", [1, 2, 3])
    assert engine.durable.count(CACHE) == 1  # the definition, no entry
    assert c.get("k") == [1, 2, 3]


def _stampede(config: OqronConfig, callers: int, start, fetched, out) -> None:
    """Child process: ``callers`` threads ask for one cold key at once."""
    engine = Engine(config, registry=Registry())
    try:
        c = engine.cache("stampede", ttl=60)
        c.read(["warm-up"])  # connected and declared before the race (no statistics)

        def fetcher(key: str) -> str:
            with fetched.get_lock():
                fetched.value += 1
            time.sleep(0.3)  # a slow origin: every other caller arrives while it runs
            return f"value of {key}"

        results: list[object] = []
        start.wait(60)
        threads = [threading.Thread(target=lambda: results.append(c.get_or_fetch("cold", fetcher)))
                   for _ in range(callers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        c.stats_counters.flush()
        out.put(results)
    finally:
        engine.close()


def test_fifty_concurrent_get_or_fetch_run_the_fetcher_once(engine: Engine, mode: str):
    fetched, out = SPAWN.Value("i", 0), SPAWN.Queue()
    if mode == "memory":  # one process holds the memory planes: 50 threads in it
        start = threading.Barrier(1)
        _stampede_in_process(engine, CALLERS, start, fetched, out)
        results = out.get(timeout=60)
    else:
        start = SPAWN.Barrier(2)
        children = [SPAWN.Process(target=_stampede, args=(engine.config, CALLERS // 2, start, fetched, out))
                    for _ in range(2)]
        for child in children:
            child.start()
        results = [value for _ in children for value in out.get(timeout=90)]
        for child in children:
            child.join(30)
            assert child.exitcode == 0
    assert results == ["value of cold"] * CALLERS
    assert fetched.value == 1
    stats = oqronkit.Cache("stampede", ttl=60, engine=engine).stats()
    assert stats["fetches"] == 1 and stats["misses"] + stats["hits"] == CALLERS


def _stampede_in_process(engine: Engine, callers: int, start, fetched, out) -> None:
    c = engine.cache("stampede", ttl=60)

    def fetcher(key: str) -> str:
        with fetched.get_lock():
            fetched.value += 1
        time.sleep(0.3)
        return f"value of {key}"

    results: list[object] = []
    threads = [threading.Thread(target=lambda: results.append(c.get_or_fetch("cold", fetcher)))
               for _ in range(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    c.stats_counters.flush()
    out.put(results)
