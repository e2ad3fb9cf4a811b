"""What a worker pays per job for a queue's limits: this checkout against another.

Interleaved rounds: in each, per mode, a fresh process of each arm (the order shuffled
per round) runs three queues one after another, each on ``--jobs`` no-op jobs added in
bulk beforehand: ``plain`` (no limits), ``rated`` (``rate_limit=(10_000, 0.001)``: the
claim's log and the start gate are paid for every job, but the rate never binds) and
``capped`` (``global_concurrency=1_000``, never binding either). One in-process
``WorkerProcess`` in burst mode (concurrency ``--concurrency``, no services) drains
the queue; jobs per second count from the worker's start to its stop, and the worker
process's CPU time per job (all its threads; the servers' own work is not in it) is
steadier than the wall clock on a busy machine. Each process has
its own Postgres schema (dropped afterwards) and Redis key prefix. The median over rounds
of each arm's jobs per second is printed with this/base ratios (the median of the
per-round ratios) and the load average. Both arms import only oqronkit's API, from their
own checkout (``PYTHONPATH``), with this virtualenv's dependencies. Modes: memory, sqlite,
postgres, redis-postgres (its own Postgres schema each) and redis.

Usage (from the repository root)::

    git worktree add /tmp/base main
    .venv/bin/python bench/queue_limits_cost.py --against /tmp/base --rounds 5 --modes postgres,redis-postgres
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from checkouts import drop_redis_project  # this folder: the scripts' own

ROOT = Path(__file__).resolve().parent.parent
PG_URL = os.environ.get("OQRON_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("OQRON_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
QUEUES = ("plain", "rated", "capped")

DRIVER = """
import json, sys, time
from oqronkit import Engine, OqronConfig, Registry
from oqronkit.worker import WorkerProcess
mode, url, redis_url, project, jobs, concurrency = sys.argv[1:7]
engine = Engine(OqronConfig(mode=mode, database_url=url or None, redis_url=redis_url or None, project=project,
                            environment="bench"), registry=Registry())
options = {"plain": {}, "rated": {"rate_limit": (10_000, 0.001)}, "capped": {"global_concurrency": 1_000}}
for name, limits in options.items():
    engine.queue(name, handler=lambda ctx: None, concurrency=int(concurrency), **limits)
found = {}
for name in options:
    queue = engine.get_queue(name)
    for start in range(0, int(jobs), 1000):
        queue.add_bulk([{"i": i} for i in range(start, min(start + 1000, int(jobs)))])
    worker = WorkerProcess(engine, queues=[name], burst=True, services=False, poll_interval=0.05)
    started, cpu = time.perf_counter(), time.process_time()
    worker.run()
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    left = engine.durable.count("queue_job:" + name)
    if left:
        raise SystemExit(f"{name}: {left} job(s) left")
    found[name] = int(jobs) / elapsed
    found[name + "_cpu_us"] = cpu / int(jobs) * 1e6
engine.close()
print(json.dumps(found))
"""


def one(checkout: Path, mode: str, args: argparse.Namespace, scratch: Path) -> dict[str, float]:
    import psycopg

    env = {k: v for k, v in os.environ.items() if not k.startswith("OQRON_")}
    env["PYTHONPATH"] = str(checkout)
    project = f"bench-{uuid.uuid4().hex[:8]}"
    schema = f"oqron_qlcost_{uuid.uuid4().hex[:8]}"
    postgres = mode in ("postgres", "redis-postgres")
    url = {"memory": "", "redis": "", "sqlite": f"sqlite:///{scratch / f'{schema}.sqlite3'}"}.get(
        mode, f"{PG_URL}?options=-csearch_path%3D{schema}")
    redis_url = REDIS_URL if mode.startswith("redis") else ""
    if postgres:
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')  # our own name, never input
    try:
        out = subprocess.run([sys.executable, "-c", DRIVER, mode, url, redis_url, project, str(args.jobs),
                              str(args.concurrency)], env=env, capture_output=True, text=True, timeout=900)
    finally:
        if postgres:
            with psycopg.connect(PG_URL, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
        if redis_url:
            drop_redis_project(REDIS_URL, project)
    if out.returncode != 0:
        raise SystemExit(f"{checkout} {mode} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", type=Path, required=True, help="the other checkout (the base)")
    parser.add_argument("--modes", default="postgres,redis-postgres")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    scratch = Path(tempfile.mkdtemp(prefix="qlimits-cost-"))  # the SQLite files
    arms = {"base": args.against.resolve(), "this": ROOT}
    found: dict[tuple[str, str], list[dict[str, float]]] = {}
    loads = []
    for _ in range(args.rounds):
        for mode in args.modes.split(","):
            order = list(arms)
            rng.shuffle(order)
            for arm in order:
                found.setdefault((mode, arm), []).append(one(arms[arm], mode, args, scratch))
        loads.append(os.getloadavg()[0])
    print(f"{args.rounds} interleaved rounds of {args.jobs} jobs per queue, concurrency {args.concurrency}; "
          f"1-min load average after each round: {', '.join(f'{x:.2f}' for x in loads)}")
    print(f"{'mode':16} {'queue':8} {'jobs/s (base)':>14} {'jobs/s (this)':>14} {'this/base':>10} "
          f"{'CPU us/job (base)':>18} {'CPU us/job (this)':>18} {'this/base':>10}")
    for mode in args.modes.split(","):
        base, this = found[(mode, "base")], found[(mode, "this")]
        for queue in QUEUES:
            cpu = queue + "_cpu_us"
            ratios = [statistics.median(t[key] / b[key] for b, t in zip(base, this, strict=True))
                      for key in (queue, cpu)]
            print(f"{mode:16} {queue:8} {statistics.median(r[queue] for r in base):14.0f} "
                  f"{statistics.median(r[queue] for r in this):14.0f} {ratios[0]:10.3f} "
                  f"{statistics.median(r[cpu] for r in base):18.0f} {statistics.median(r[cpu] for r in this):18.0f} "
                  f"{ratios[1]:10.3f}")
    print("this/base: the median of the per-round ratios (jobs/s below 1, CPU above 1: this checkout costs more)")
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
