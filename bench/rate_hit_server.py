"""Redis server time per rate-limit check: ``INFO commandstats`` usec_per_call of
``evalsha`` after ``CONFIG RESETSTAT`` and ``--checks`` sequential checks, for
``oqronkit.rate_limit`` (the exact and the approximate sliding window, gcra) and the
``limits`` package's moving-window and sliding-window-counter limiters, on one hot key and
on 10,000 keys.

Client time and round trips are left out: this is the script's own cost in Redis, the
part that decides the checks/s ratio on a quiet machine (bench/limits.py). usec_per_call
is wall time, inflated when other processes take Redis' core; on a local Redis the table
also shows the CPU time its main thread spent per check (/proc schedstat: the script plus
reading the command and writing the reply), which preemption does not inflate.
RESETSTAT resets every client's statistics: point it at a Redis of its own
(``--redis-url``) when others share the default one. Every key is dropped after.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis

ROOT = Path(__file__).resolve().parent.parent
# Run as bench/rate_hit_server.py, bench/limits.py would shadow the limits package.
sys.path[:] = [str(ROOT), *(p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench")]

from bench.limits import SHAPES, limits_system, oqron_system  # noqa: E402


def main_thread_cpu_ns(client: redis.Redis) -> Callable[[], int] | None:
    """The Redis main thread's CPU time so far, when that Redis runs on this machine."""
    pid = client.info("server").get("process_id")
    path = Path(f"/proc/{pid}/task/{pid}/schedstat")
    if not path.exists():
        return None
    return lambda: int(path.read_text().split()[0])


def server_usec(client: redis.Redis, cpu_ns: Callable[[], int] | None, check: Any, keys: list[str],
                checks: int) -> tuple[float, float]:
    """usec_per_call of evalsha, and the main thread's CPU us per check (0: unknown)."""
    for key in keys[:50]:  # connected, scripts loaded, definition written
        check(key)
    client.config_resetstat()
    cpu_before = cpu_ns() if cpu_ns else 0
    for i in range(checks):
        check(keys[i % len(keys)])
    cpu = (cpu_ns() - cpu_before) / 1000 / checks if cpu_ns else 0.0
    stats = client.info("commandstats").get("cmdstat_evalsha", {})
    return float(stats.get("usec", 0)) / max(int(stats.get("calls", 0)), 1), cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--checks", type=int, default=20_000, help="per system, shape and repetition")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    run = uuid.uuid4().hex[:8]
    project, prefix = f"bench-server-{run}", f"bench-server-{run}"
    systems = {
        "oqronkit sliding-window": oqron_system(args.redis_url, project, "sliding-window"),
        "oqronkit sliding-approx": oqron_system(args.redis_url, project + "-a", "sliding-window-approx"),
        "oqronkit gcra": oqron_system(args.redis_url, project + "-g", "gcra"),
        "limits moving-window": limits_system(args.redis_url, prefix + "-m", "moving"),
        "limits sliding-window": limits_system(args.redis_url, prefix + "-s", "sliding"),
    }
    client = redis.Redis.from_url(args.redis_url)
    cpu_ns = main_thread_cpu_ns(client)
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    try:
        for _ in range(args.repeat):
            for shape, count in SHAPES.items():
                keys = [f"k{i}" for i in range(count)]
                for name, check in systems.items():
                    measured = server_usec(client, cpu_ns, check, keys, args.checks)
                    results.setdefault((name, shape), []).append(measured)
    finally:
        for pattern in (f"oqron:{project}*", f"{prefix}*"):
            for key in client.scan_iter(match=pattern, count=1000):
                client.delete(key)

    print(f"\nRedis time per check, median of {args.repeat} x {args.checks} checks, {args.redis_url}")
    print("usec/call: evalsha usec_per_call (wall); cpu us: the main thread's CPU per check (0: not local)")
    print(f"{'system':26} {'shape':12} {'usec/call':>9} {'cpu us':>7}  runs (usec/call)")
    for (name, shape), runs in results.items():
        wall, cpu = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
        print(f"{name:26} {shape:12} {wall:9.2f} {cpu:7.2f}  {' '.join(f'{r[0]:.2f}' for r in runs)}")


if __name__ == "__main__":
    main()
