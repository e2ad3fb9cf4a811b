"""The task body every benchmarked system runs, and the Redis keys the harness reads.

Imported by both virtualenvs (ours and the peers'), so it needs nothing but ``redis``.
Configuration comes from the environment the harness sets for each phase:

* ``BENCH_REDIS_URL``: where the completion counter lives;
* ``BENCH_KEY``: the phase's key prefix (unique per phase, so phases never mix);
* ``BENCH_TARGET``: the task count at which the last completion time is stamped.

The body is one ``INCR`` (identical in every system). Two tasks out of N also stamp a
time (the first and the ``BENCH_TARGET``-th), and latency jobs, whose payload carries
the enqueue time ``t``, push ``start - t`` to a list.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import redis

_lock = threading.Lock()
_client: redis.Redis | None = None


def keys(prefix: str) -> dict[str, str]:
    """The Redis keys of one phase."""
    return {
        "done": f"{prefix}:done",
        "first": f"{prefix}:first",
        "last": f"{prefix}:last",
        "latency": f"{prefix}:latency",
    }


def client() -> redis.Redis:
    """One thread-safe client per process (redis-py pools its connections)."""
    global _client
    if _client is None:
        with _lock:
            if _client is None:
                _client = redis.Redis.from_url(os.environ["BENCH_REDIS_URL"])
    return _client


def complete(payload: dict[str, Any]) -> None:
    """The benchmarked task: count one completion (plus the rare stamps above)."""
    started = time.time()
    names = keys(os.environ["BENCH_KEY"])
    r = client()
    if "t" in payload:
        r.rpush(names["latency"], started - float(payload["t"]))
    n = r.incr(names["done"])
    if n == 1:
        r.set(names["first"], repr(time.time()))
    if n == int(os.environ.get("BENCH_TARGET", "0")):
        r.set(names["last"], repr(time.time()))


def complete_many(payloads: list[dict[str, Any]]) -> None:
    """A batch handler's body: the same completions counted with one ``INCRBY`` (and
    the same stamps), as a batch handler would write one bulk request for its jobs."""
    started = time.time()
    names = keys(os.environ["BENCH_KEY"])
    r = client()
    lags = [started - float(p["t"]) for p in payloads if "t" in p]
    if lags:
        r.rpush(names["latency"], *lags)
    n = r.incrby(names["done"], len(payloads))
    if n - len(payloads) < 1 <= n:
        r.set(names["first"], repr(time.time()))
    target = int(os.environ.get("BENCH_TARGET", "0"))
    if n - len(payloads) < target <= n:
        r.set(names["last"], repr(time.time()))


def payload(i: int, stamp: bool = False) -> dict[str, Any]:
    """The job payload of peer-bench.md; ``stamp`` adds the enqueue time for latency."""
    data: dict[str, Any] = {"i": i, "to": f"user-{i}@example.com"}
    if stamp:
        data["t"] = time.time()
    return data
