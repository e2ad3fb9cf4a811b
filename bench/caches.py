"""Cache ``get`` hit latency on one Redis: oqronkit's cache without and with its L1,
against django-redis ``get`` and a raw redis-py ``GET`` (a floor).

    .venv/bin/python bench/caches.py [--redis-url redis://127.0.0.1:6379/0] [--gets 20000]

Every contender reads the same ~200-byte JSON value from one hot key, one call at a
time in one thread, after a warm-up. oqronkit without the L1 is one round trip (the
entry's script and its generations' MGET, pipelined); its L1 hit is none. Prints median, p95, p99
per call and calls per second. Keys are written under a fresh prefix and deleted after.
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

VALUE = {"id": 42, "name": "Ada Lovelace", "email": "ada@example.com", "roles": ["admin", "ops"],
         "prefs": {"theme": "dark", "tz": "Europe/London", "lang": "en"}, "bio": "x" * 60}


def timed(fn: Callable[[], Any], n: int) -> list[float]:
    for _ in range(min(1000, n)):
        fn()
    out = []
    clock = time.perf_counter_ns
    for _ in range(n):
        started = clock()
        fn()
        out.append((clock() - started) / 1000)
    return out


def row(name: str, samples: list[float]) -> str:
    q = statistics.quantiles(samples, n=100)
    return (f"| {name:<34} | {statistics.median(samples):8.1f} | {q[94]:8.1f} | {q[98]:8.1f} "
            f"| {len(samples) / (sum(samples) / 1e6):10,.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--gets", type=int, default=20_000)
    args = parser.parse_args()

    import django
    import redis
    from django.conf import settings

    from oqronkit import Engine
    from oqronkit.config import OqronConfig
    from oqronkit.queues.queue import Registry

    prefix = f"bench-{uuid.uuid4().hex[:8]}"
    settings.configure(CACHES={"default": {
        "BACKEND": "django_redis.cache.RedisCache", "LOCATION": args.redis_url, "KEY_PREFIX": prefix}})
    django.setup()
    from django.core.cache import cache as django_cache

    engine = Engine(OqronConfig(mode="redis", database_url=None, redis_url=args.redis_url, project=prefix),
                    registry=Registry())
    raw = redis.Redis.from_url(args.redis_url)
    try:
        django_cache.set("hot", VALUE, 3600)
        raw.set(f"{prefix}:raw", django_cache.client.encode(VALUE))  # the same bytes django-redis reads
        plain = engine.cache("plain", ttl=3600)
        local = engine.cache("local", ttl=3600, local=1000)
        plain.set("user:42", VALUE)
        local.set("user:42", VALUE)
        assert plain.get("user:42") == VALUE == local.get("user:42") == django_cache.get("hot")
        results = [
            ("redis-py GET (floor)", timed(lambda: raw.get(f"{prefix}:raw"), args.gets)),
            ("django-redis get", timed(lambda: django_cache.get("hot"), args.gets)),
            ("oqronkit cache get, no L1", timed(lambda: plain.get("user:42"), args.gets)),
            ("oqronkit cache get, L1 hit", timed(lambda: local.get("user:42"), args.gets)),
        ]
        print(f"cache get hit latency, {args.gets:,} calls each, one thread, {args.redis_url}\n")
        print("| contender                          | p50 (us) | p95 (us) | p99 (us) |    calls/s |")
        print("|------------------------------------|---------:|---------:|---------:|-----------:|")
        for name, samples in results:
            print(row(name, samples))
    finally:
        django_cache.delete("hot")
        keys = list(raw.scan_iter(match=f"*{prefix}*"))
        if keys:
            raw.delete(*keys)
        engine.close()


if __name__ == "__main__":
    main()
