"""What one ``add`` and one ``add_bulk`` cost a producer: this checkout against another.

Interleaved rounds: in each, a fresh process of each arm (the order shuffled per
round) adds ``--singles`` jobs one ``add`` at a time, then ``--bulk`` jobs with
``add_bulk`` in chunks of 1,000, into its own project on the same database; the median
over rounds of each arm's microseconds per call is printed with this/base ratios. Both
arms import only oqronkit's public API, from their own checkout (``PYTHONPATH``), with
this virtualenv's dependencies.

Usage (from the repository root; ``--against`` takes a revision, checked out into a
temporary worktree, or a checkout's directory)::

    .venv/bin/python bench/add_cost.py --against 91cc35d --rounds 7 --modes postgres,redis-postgres

``--huey``: a third arm in every round, Huey's enqueue call (``RedisHuey``, one task call
per job, from the peers' virtualenv ``bench/.peers-venv``), and each mode's single
``add`` against it (issue 36: redis mode within 1.2x of Huey's enqueue).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import uuid
from pathlib import Path

from checkouts import drop_redis_project, other_checkout  # this folder: the scripts' own

ROOT = Path(__file__).resolve().parent.parent
PG_URL = os.environ.get("OQRON_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("OQRON_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")

# The Redis server's own CPU seconds (INFO cpu): per call only on a server nobody else uses.
SERVER_CPU = """
def server_cpu(url):
    if not url:
        return 0.0
    import redis
    info = redis.Redis.from_url(url).info("cpu")
    return info["used_cpu_user"] + info["used_cpu_sys"]
"""

DRIVER = SERVER_CPU + """
import json, sys, time, oqronkit
mode, url, redis_url, project, singles, bulk = sys.argv[1:7]
oqronkit.configure(oqronkit.OqronConfig(mode=mode, database_url=url, redis_url=redis_url or None,
                                         project=project, environment="bench"))
q = oqronkit.queue("bench-add")
q.add({"warm": True})
server = server_cpu(redis_url)
started, cpu = time.perf_counter(), time.process_time()
for n in range(int(singles)):
    q.add({"n": n, "to": "someone@example.com"})
single_s, cpu_s = time.perf_counter() - started, time.process_time() - cpu
server_s = server_cpu(redis_url) - server
items = [{"n": n, "to": "someone@example.com"} for n in range(int(bulk))]
started = time.perf_counter()
for start in range(0, len(items), 1000):
    q.add_bulk(items[start:start + 1000])
bulk_s = time.perf_counter() - started
print(json.dumps({"single_us": single_s / int(singles) * 1e6, "bulk_us_per_job": bulk_s / int(bulk) * 1e6,
                  "single_cpu_us": cpu_s / int(singles) * 1e6, "server_cpu_us": server_s / int(singles) * 1e6}))
"""


HUEY_DRIVER = SERVER_CPU + """
import json, sys, time
from huey import RedisHuey
redis_url, name, singles = sys.argv[1:4]
huey = RedisHuey(name, url=redis_url)

@huey.task()
def bench_task(data):
    pass

bench_task({"warm": True})
server = server_cpu(redis_url)
started, cpu = time.perf_counter(), time.process_time()
for n in range(int(singles)):
    bench_task({"n": n, "to": "someone@example.com"})
single_s, cpu_s = time.perf_counter() - started, time.process_time() - cpu
server_s = server_cpu(redis_url) - server
huey.storage.flush_all()
print(json.dumps({"single_us": single_s / int(singles) * 1e6, "single_cpu_us": cpu_s / int(singles) * 1e6,
                  "server_cpu_us": server_s / int(singles) * 1e6}))
"""
PEERS_PYTHON = ROOT / "bench" / ".peers-venv" / "bin" / "python"


def huey(args: argparse.Namespace, scratch: Path) -> dict[str, float]:
    """One producer process calling a Huey task ``--singles`` times (its queue emptied after)."""
    name = f"bench_add_{uuid.uuid4().hex[:8]}"  # Huey keeps [A-Za-z0-9_] of a name
    out = subprocess.run([str(PEERS_PYTHON), "-c", HUEY_DRIVER, REDIS_URL, name, str(args.singles)], cwd=scratch,
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"huey failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def database_url(mode: str, scratch: Path) -> str:
    return f"sqlite:///{scratch / f'{uuid.uuid4().hex}.sqlite3'}" if mode == "sqlite" else PG_URL


def one(checkout: Path, mode: str, args: argparse.Namespace, scratch: Path, pg_url: str | None = None
        ) -> dict[str, float]:
    """One producer process of ``checkout`` in ``mode`` (Postgres at ``pg_url``, default PG_URL)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OQRON_")}
    env["PYTHONPATH"] = str(checkout)
    redis_url = REDIS_URL if mode.startswith("redis") else ""
    project = f"bench-{uuid.uuid4().hex[:8]}"
    url = pg_url if pg_url and mode != "sqlite" else database_url(mode, scratch)
    try:
        out = subprocess.run([sys.executable, "-c", DRIVER, mode, url, redis_url, project, str(args.singles),
                              str(args.bulk)], cwd=scratch, env=env, capture_output=True, text=True, timeout=600)
    finally:
        if redis_url:  # nothing of the round stays on the shared Redis
            drop_redis_project(redis_url, project)
    if out.returncode != 0:
        raise SystemExit(f"{checkout} {mode} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", required=True, help="the other revision, or a checkout's directory (the base)")
    parser.add_argument("--modes", default="sqlite,postgres,redis-postgres")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--singles", type=int, default=2000)
    parser.add_argument("--bulk", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--huey", action="store_true", help="also time Huey's enqueue call in every round")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    scratch = Path(os.environ.get("TMPDIR", "/tmp")) / f"add-cost-{uuid.uuid4().hex[:6]}"
    scratch.mkdir()
    with other_checkout(args.against) as base:
        found = rounds(args, {"base": base, "this": ROOT}, rng, scratch)
    report(args, found)
    return 0


def rounds(args: argparse.Namespace, arms: dict[str, Path], rng: random.Random, scratch: Path
           ) -> dict[tuple[str, str], list[dict[str, float]]]:
    found: dict[tuple[str, str], list[dict[str, float]]] = {}
    for _ in range(args.rounds):
        for mode in args.modes.split(","):
            order = [*arms, *(["huey"] if args.huey else [])]
            rng.shuffle(order)
            for arm in order:
                result = huey(args, scratch) if arm == "huey" else one(arms[arm], mode, args, scratch)
                found.setdefault((mode, arm), []).append(result)
    return found


def report(args: argparse.Namespace, found: dict[tuple[str, str], list[dict[str, float]]]) -> None:
    print(f"load average at the end: {os.getloadavg()[0]:.2f}; {args.rounds} interleaved rounds, medians")
    print(f"{'mode':16} {'add us (base)':>14} {'add us (this)':>14} {'this/base':>10} "
          f"{'bulk us/job (base)':>19} {'bulk us/job (this)':>19} {'this/base':>10}")
    for mode in args.modes.split(","):
        base, this = found[(mode, "base")], found[(mode, "this")]
        med = {(arm, key): statistics.median(r[key] for r in rows) for arm, rows in (("base", base), ("this", this))
               for key in ("single_us", "bulk_us_per_job")}
        pair = [statistics.median(t[k] / b[k] for b, t in zip(base, this, strict=True))
                for k in ("single_us", "bulk_us_per_job")]
        print(f"{mode:16} {med['base', 'single_us']:14.0f} {med['this', 'single_us']:14.0f} {pair[0]:10.3f} "
              f"{med['base', 'bulk_us_per_job']:19.1f} {med['this', 'bulk_us_per_job']:19.1f} {pair[1]:10.3f}")
    print("this/base: the median of the per-round ratios (below 1: this checkout is faster)")
    if args.huey:
        print(f"\n{'mode':16} {'Huey us':>10} {'base/Huey':>10} {'this/Huey':>10}  (single call; medians of the "
              "per-round ratios, Huey timed beside each mode)")
        for mode in args.modes.split(","):
            runs = found[(mode, "huey")]
            ratios = [statistics.median(a["single_us"] / h["single_us"] for a, h in zip(found[(mode, arm)], runs,
                                                                                       strict=True))
                      for arm in ("base", "this")]
            print(f"{mode:16} {statistics.median(h['single_us'] for h in runs):10.0f} {ratios[0]:10.2f} "
                  f"{ratios[1]:10.2f}")
        print(f"\n{'mode':16} {'arm':6} {'client CPU us':>14} {'Redis CPU us':>13}  (per single call, medians; Redis "
              "CPU from INFO cpu: only meaningful on a Redis nobody else uses, OQRON_BENCH_REDIS_URL)")
        for mode in args.modes.split(","):
            for arm in ("base", "this", "huey"):
                runs = found[(mode, arm)]
                print(f"{mode:16} {arm:6} {statistics.median(r['single_cpu_us'] for r in runs):14.1f} "
                      f"{statistics.median(r['server_cpu_us'] for r in runs):13.1f}")


if __name__ == "__main__":
    raise SystemExit(main())
