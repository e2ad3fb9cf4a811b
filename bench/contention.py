"""The machine's own contention factor, for capacity.py: how much more CPU a fixed unit of
work costs each tier when P client processes run at once instead of one.

A synthetic client repeats one unit: a fixed piece of pure Python (about the worker's
own per-job work), one Postgres round trip (a fixed read-only query, about 20-40 us of
backend CPU) and one Redis ``INCR``. Clients share nothing (each its own connection,
no table, each ``INCR`` on one counter key that nothing else reads while they run), so
the CPU per unit can only move with the machine: CPUs shared between more runnable
processes, more context switches and colder caches, a VM's time stretched under load.
It runs with 1 and with P copies, each pinned to its own CPU as the engine pins its
processes (``--cpu-affinity``), and reports per unit the clients' CPU, the Postgres
backends' CPU (``/proc``) and Redis's (``INFO cpu``); ``factor(P) = cost(P) / cost(1)``
per tier. None of the engine runs and none of the measured runs is used: the check in
capacity.py scales the 1-process runs' CPU per job by these factors (``from p1 x
machine``) and compares with the P-process runs.

Run alone (from the repository root): ``.venv/bin/python bench/contention.py
--redis-url redis://127.0.0.1:6379/0`` (the Redis factor is only meaningful on a Redis
nobody else uses; capacity.py runs it on its private one).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

TICK = 1.0 / os.sysconf("SC_CLK_TCK")
APP_NAME = "oqron-capacity-calibration"
#: A query that costs the backend CPU but touches no table, buffer or lock (shared by nothing).
QUERY = "SELECT sum(i * i) FROM generate_series(1, 400) AS i"
TIERS = ("client_us", "pg_us", "redis_us", "redis_main_us")


def python_unit(seed: int) -> int:
    """A fixed piece of pure-Python work (dicts, strings, a sort): the interpreter's mix."""
    record = {f"field{j}": (seed * 31 + j) % 977 for j in range(24)}
    text = json.dumps(record, separators=(",", ":"))
    back = json.loads(text)
    names = sorted(back, key=lambda k: back[k])
    return sum(len(name) for name in names) + len(text)


def client(pg_url: str, redis_url: str, key: str, cpu: int, threads: int) -> None:
    """Repeat the unit on ``threads`` threads until killed (the parent counts units through
    ``key``): like an engine process, one GIL shared by handler threads that wait on sockets."""
    import threading

    import psycopg
    import redis

    if cpu >= 0 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {cpu})

    def slot() -> None:
        conn = psycopg.connect(pg_url, autocommit=True, application_name=APP_NAME)
        rds = redis.Redis.from_url(redis_url)
        seed = 0
        while True:
            seed += 1
            python_unit(seed)
            conn.execute(QUERY).fetchone()
            rds.incr(key)

    for _ in range(threads):
        threading.Thread(target=slot, daemon=True).start()
    threading.Event().wait()


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) * TICK


def context_switches(pids: list[int]) -> tuple[int, int]:
    """Voluntary and involuntary context switches of every thread of ``pids`` so far."""
    counts = [0, 0]
    for pid in pids:
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{pid}/task"):
                with contextlib.suppress(OSError):
                    for line in Path(f"/proc/{pid}/task/{task}/status").read_text().splitlines():
                        if line.startswith("voluntary_ctxt_switches"):
                            counts[0] += int(line.split()[1])
                        elif line.startswith("nonvoluntary_ctxt_switches"):
                            counts[1] += int(line.split()[1])
    return counts[0], counts[1]


@contextlib.contextmanager
def busy_cpus(count: int, beside: list[int]) -> Iterator[None]:
    """``count`` pure-Python busy loops, each pinned to a CPU that none of the processes
    ``beside`` is pinned to (unpinned when there is none): the CPU a second engine
    process would take, without its round trips."""
    allowed = sorted(os.sched_getaffinity(0))
    taken: set[int] = set()
    for pid in beside:
        with contextlib.suppress(OSError):
            cpus = os.sched_getaffinity(pid)
            if len(cpus) < len(allowed):
                taken |= cpus
    free = [cpu for cpu in allowed if cpu not in taken]
    procs = []
    try:
        for i in range(count):
            proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
            procs.append(proc)
            if free:
                os.sched_setaffinity(proc.pid, {free[i % len(free)]})
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def _redis_cpu(rds: Any) -> tuple[float, float]:
    info = rds.info("cpu")
    main = info.get("used_cpu_sys_main_thread", info["used_cpu_sys"]) + info.get(
        "used_cpu_user_main_thread", info["used_cpu_user"])
    return float(info["used_cpu_sys"] + info["used_cpu_user"]), float(main)


def measure(pg_url: str, redis_url: str, copies: int, *, seconds: float = 3.0, pinned: bool = True,
            threads: int = 5) -> dict[str, float]:
    """Run ``copies`` clients for ``seconds`` (after a warm-up) and return CPU per unit."""
    import psycopg
    import redis

    ncpu = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(ncpu))
    key = f"oqron:calibration:{os.getpid()}:{time.monotonic_ns()}"
    rds = redis.Redis.from_url(redis_url)
    argv = [sys.executable, str(Path(__file__).resolve()), "--client", pg_url, redis_url, key, str(threads)]
    procs = [subprocess.Popen([*argv, str(cpus[i % len(cpus)] if pinned and copies <= len(cpus) else -1)])
             for i in range(copies)]
    try:
        with psycopg.connect(pg_url, autocommit=True) as watch:
            deadline = time.monotonic() + 15
            backends: list[int] = []
            while len(backends) < copies * threads or int(rds.get(key) or 0) < 50 * copies:
                if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                    raise RuntimeError("calibration clients did not start")
                time.sleep(0.05)
                backends = [row[0] for row in watch.execute(
                    "SELECT pid FROM pg_stat_activity WHERE application_name = %s", (APP_NAME,)).fetchall()]
            time.sleep(0.3)  # warm-up: imports and first queries out of the window

            def snapshot() -> tuple[float, int, float, float, float, float, int, int]:
                units = int(rds.get(key) or 0)
                return (time.monotonic(), units, sum(_cpu_seconds(p.pid) for p in procs),
                        sum(_cpu_seconds(pid) for pid in backends), *_redis_cpu(rds),
                        *context_switches([p.pid for p in procs]))

            start = snapshot()
            time.sleep(seconds)
            end = snapshot()
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait()
        rds.delete(key)
    units = end[1] - start[1]
    if units <= 0:
        raise RuntimeError("calibration clients did no work")
    per = [(e - s) / units * 1e6 for s, e in zip(start[2:6], end[2:6], strict=True)]
    return {"units_s": units / (end[0] - start[0]), "client_us": per[0], "pg_us": per[1],
            "redis_us": per[2], "redis_main_us": per[3], "voluntary_switches": (end[6] - start[6]) / units,
            "involuntary_switches": (end[7] - start[7]) / units}


def factors(one: dict[str, float], many: dict[str, float]) -> dict[str, float]:
    """Per tier, the P-copy cost over the 1-copy cost."""
    return {tier: many[tier] / one[tier] if one[tier] > 0 else 1.0 for tier in TIERS}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--client"]:
        client(*argv[1:4], threads=int(argv[4]), cpu=int(argv[5]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pg-url", default=os.environ.get("BENCH_PG_URL",
                                                           "postgresql://postgres@127.0.0.1:5432/postgres"))
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--copies", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=5, help="threads per client (the queue's concurrency)")
    parser.add_argument("--unpinned", action="store_true")
    args = parser.parse_args(argv)
    for _ in range(args.repeat):
        one = measure(args.pg_url, args.redis_url, 1, seconds=args.seconds, pinned=not args.unpinned,
                      threads=args.threads)
        many = measure(args.pg_url, args.redis_url, args.copies, seconds=args.seconds, pinned=not args.unpinned,
                      threads=args.threads)
        ratio = factors(one, many)
        print(f"load {os.getloadavg()[0]:.2f}  " + "  ".join(
            f"{tier} {one[tier]:.1f} -> {many[tier]:.1f} (x{ratio[tier]:.2f})" for tier in TIERS)
            + f"  units/s {one['units_s']:,.0f} -> {many['units_s']:,.0f}  switches/unit "
            f"{one['voluntary_switches']:.2f}+{one['involuntary_switches']:.2f} -> "
            f"{many['voluntary_switches']:.2f}+{many['involuntary_switches']:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
