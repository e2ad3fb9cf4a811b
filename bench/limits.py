"""Rate-limit checks per second on one Redis: ``oqronkit.rate_limit`` (the exact sliding
window, the approximate one and gcra, through the engine's public API) against the
``limits`` package's Redis moving-window limiter (exact, the same guarantee as our sliding
window) and sliding-window-counter one (approximate, as ours), and against a raw redis-py
``INCR``+``EXPIRE`` pipeline (a floor: one round trip, no algorithm, not a peer). Every
system but the ceiling goes through redis-py's client; ``--no-hiredis`` keeps redis-py off
the hiredis parser (run it in turns with a run without it to see what hiredis does).

Each system runs sequential ``check()``/``hit()`` calls from one thread for ``--seconds``
per repetition, on two shapes: every call on one hot key, and calls spread over 10,000 keys
(random order). Systems take turns in 0.25 s slices, shuffled each round, so a noisy
machine's slow spells fall on every system alike; ``--repeat`` repetitions; the table shows
each system's median checks/s and its ratio to limits' moving window and to the floor (of
the medians, and the median of each repetition's ratio: steadier on a noisy machine).
Targets: >= 1.5x limits' moving window (not met through redis-py's client: bench/README.md)
and >= 0.5x the floor. Every key is dropped after.

Needs ``pip install limits==5.8.0`` (requirements-dev.txt).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

if "--no-hiredis" in sys.argv:  # before redis-py is imported: it picks its parser then
    sys.modules["hiredis"] = None  # type: ignore[assignment]

import redis
from redis.utils import HIREDIS_AVAILABLE

ROOT = Path(__file__).resolve().parent.parent
# Run as bench/limits.py, this file would shadow the limits package it measures.
sys.path[:] = [str(ROOT), *(p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench")]

LIMIT, PERIOD_S = 1_000_000, 3600  # never refuses within a run: every system does the same work
SHAPES = {"one hot key": 1, "10,000 keys": 10_000}
SLICE_S = 0.25  # systems take turns in slices this long: a repetition's ratios compare like moments


def oqron_system(url: str, project: str, algorithm: str) -> Callable[[str], Any]:
    from oqronkit import Engine, OqronConfig, Registry

    engine = Engine(OqronConfig(mode="redis", database_url=None, redis_url=url, project=project),
                    registry=Registry())
    limiter = engine.rate_limit("bench", algorithm=algorithm, limit=LIMIT, period=PERIOD_S)
    return limiter.check


def limits_system(url: str, prefix: str, strategy: str) -> Callable[[str], Any]:
    from limits import RateLimitItemPerHour, storage, strategies

    store = storage.RedisStorage(url, key_prefix=prefix)
    limiter = {"moving": strategies.MovingWindowRateLimiter,
               "sliding": strategies.SlidingWindowCounterRateLimiter}[strategy](store)
    item = RateLimitItemPerHour(LIMIT)
    return lambda key: limiter.hit(item, key)


def floor_system(url: str, prefix: str) -> Callable[[str], Any]:
    client = redis.Redis.from_url(url)

    def check(key: str) -> Any:
        pipe = client.pipeline(transaction=False)
        pipe.incr(prefix + key)
        pipe.expire(prefix + key, PERIOD_S)
        return pipe.execute()[0] <= LIMIT

    return check


def ceiling_system(url: str, project: str) -> Callable[[str], Any]:
    """Our exact sliding window's script with no client around it: a socket, each key's
    frame built before the run, one sendall and one recv per check. What any
    one-round-trip client of this script can reach on this machine (not a usable limiter:
    the time never moves)."""
    import socket

    from oqronkit.backends.rate_types import Tier
    from oqronkit.backends.redis.keys import rate_keys
    from oqronkit.backends.redis.rates import _rate_args
    from oqronkit.backends.types import Scope

    def bulk(value: bytes) -> bytes:  # one RESP bulk string
        return b"$%d\r\n%s\r\n" % (len(value), value)

    client = redis.Redis.from_url(url)
    script = (ROOT / "oqronkit/backends/redis/lua/rate_hit.lua").read_text()
    sha = client.script_load(script)
    tail = _rate_args((Tier("sliding-window", LIMIT, PERIOD_S * 1000),), None)
    options = client.connection_pool.connection_kwargs
    sock = socket.create_connection((options.get("host", "127.0.0.1"), options.get("port", 6379)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if options.get("db"):
        sock.sendall(b"*2\r\n$6\r\nSELECT\r\n$%d\r\n%d\r\n" % (len(str(options["db"])), options["db"]))
        sock.recv(100)
    now = int(time.time() * 1000)
    frames: dict[str, bytes] = {}

    def frame(key: str) -> bytes:
        keys = rate_keys(Scope(project, "bench"), "bench", key, (PERIOD_S * 1000,))
        parts = ["EVALSHA", sha, str(len(keys)), *keys, str(now), "1", *tail]
        return b"*%d\r\n" % len(parts) + b"".join(bulk(part.encode()) for part in parts)

    def check(key: str) -> Any:
        sock.sendall(frames.get(key) or frames.setdefault(key, frame(key)))
        return sock.recv(4096)

    return check


class Runner:
    """One system's sequential checks on one shape, run in slices: each call of ``run``
    continues through the keys where the last one stopped."""

    def __init__(self, check: Callable[[str], Any], keys: list[str]) -> None:
        self.check, self.keys, self.done, self.spent = check, keys, 0, 0.0
        for key in keys[:50]:  # connected, scripts loaded, definition written
            check(key)

    def run(self, seconds: float) -> None:
        check, keys = self.check, self.keys
        done, started = 0, time.perf_counter()
        deadline = started + seconds
        while True:
            for key in keys[(self.done + done) % len(keys):] if len(keys) > 1 else keys * 200:
                check(key)
                done += 1
                if done % 200 == 0 and time.perf_counter() >= deadline:
                    self.done, self.spent = self.done + done, self.spent + time.perf_counter() - started
                    return

    @property
    def rate(self) -> float:
        return self.done / self.spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--seconds", type=float, default=3.0, help="per system, shape and repetition")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-hiredis", action="store_true", help="redis-py's own parser, not hiredis")
    args = parser.parse_args()

    run = uuid.uuid4().hex[:8]
    project = f"bench-limits-{run}"
    prefix = f"bench-limits-{run}"
    makers: dict[str, Callable[[], Callable[[str], Any]]] = {
        "oqronkit sliding-window": lambda: oqron_system(args.redis_url, project, "sliding-window"),
        "oqronkit sliding-approx": lambda: oqron_system(args.redis_url, project + "-a", "sliding-window-approx"),
        "oqronkit gcra": lambda: oqron_system(args.redis_url, project + "-g", "gcra"),
        "limits sliding-window": lambda: limits_system(args.redis_url, prefix + "-s", "sliding"),
        "limits moving-window": lambda: limits_system(args.redis_url, prefix + "-m", "moving"),
        "floor INCR+EXPIRE": lambda: floor_system(args.redis_url, prefix + "-f:"),
        "ceiling: bare script": lambda: ceiling_system(args.redis_url, project + "-c"),
    }
    systems = {name: make() for name, make in makers.items()}
    results: dict[tuple[str, str], list[float]] = {}
    try:
        for _ in range(args.repeat):
            for shape, count in SHAPES.items():
                keys = [f"k{i}" for i in range(count)]
                random.shuffle(keys)
                runners = {name: Runner(check, keys) for name, check in systems.items()}
                for _ in range(max(1, round(args.seconds / SLICE_S))):
                    order = list(runners)
                    random.shuffle(order)
                    for name in order:
                        runners[name].run(SLICE_S)
                for name, runner in runners.items():
                    results.setdefault((name, shape), []).append(runner.rate)
    finally:
        client = redis.Redis.from_url(args.redis_url)
        for pattern in (f"oqron:{project}*", f"{prefix}*"):
            for key in client.scan_iter(match=pattern, count=1000):
                client.delete(key)

    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"\nchecks/s, one thread, median of {args.repeat} x {args.seconds:g} s, Redis {args.redis_url}, "
          f"hiredis {'on' if HIREDIS_AVAILABLE else 'off'}, load average at the end {load}")
    print("(p): the median of each repetition's ratio, both measured within seconds of each other")
    print(f"{'system':26} {'shape':12} {'checks/s':>10} {'x moving':>9} {'x floor':>8} "
          f"{'x mov(p)':>8} {'x floor(p)':>10}")
    for shape in SHAPES:
        moving_runs, floor_runs = results[("limits moving-window", shape)], results[("floor INCR+EXPIRE", shape)]
        moving, floor = statistics.median(moving_runs), statistics.median(floor_runs)
        for name in systems:
            runs = results[(name, shape)]
            rate = statistics.median(runs)
            paired_moving = statistics.median(r / m for r, m in zip(runs, moving_runs, strict=True))
            paired_floor = statistics.median(r / f for r, f in zip(runs, floor_runs, strict=True))
            print(f"{name:26} {shape:12} {rate:10,.0f} {rate / moving:9.2f} {rate / floor:8.2f} "
                  f"{paired_moving:8.2f} {paired_floor:10.2f}")


if __name__ == "__main__":
    main()
