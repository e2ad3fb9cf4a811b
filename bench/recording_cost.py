"""What recording runs costs the Postgres-mode worker: interleaved pairs, with and without.

``bench/throughput.py`` measures one processing phase per system and repetition, each
against everything else the machine does at that moment; on a noisy VM one pair of
phases can differ by 30 points either way. This script runs many short pairs, in a
random order within each pair, and reports the median of the per-pair costs, with
where the CPU went:

* ``jobs/s``: wall time per job from the 1,000th completion to the last, so the
  worker's start-up and first claims are left out;
* ``worker us/job``, ``postgres us/job``: CPU time (``/proc``) of the worker process and
  of every PostgreSQL process over the same interval, per job.

Each phase enqueues ``--jobs`` no-op jobs (``throughput.py``'s payload) with ``add_bulk`` into emptied tables, then
starts ``bench/peers/oqron_worker.py`` (``--no-record-runs`` for the "without" arm),
the same worker ``throughput.py`` runs for ``oqron-postgres-norec``.

Usage (from the repository root, with the project's virtualenv)::

    .venv/bin/python bench/recording_cost.py --pairs 12 --jobs 10000
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import redis

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT / "bench" / "peers"
SKIP = 1000
ENQUEUE = """
import oqron_tasks
from common import payload
from oqronkit import get_engine
n = int({n})
for start in range(0, n, 5000):
    oqron_tasks.bench.add_bulk([payload(i) for i in range(start, min(n, start + 5000))])
get_engine().close()
"""


def cpu_ticks(pids: list[int]) -> int:
    """utime + stime of ``pids``, in clock ticks (processes gone meanwhile count 0)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total


def postgres_pids() -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == "postgres":
                    out.append(int(entry.name))
            except OSError:
                pass
    return out


def database_url(base: str, name: str) -> str:
    head, _, _ = base.rpartition("/")
    return f"{head}/{name}"


def reset(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        names = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE 'oqron\\_%'")]
        if names:
            conn.execute("TRUNCATE " + ", ".join(f'"{n}"' for n in names))
        conn.execute("CHECKPOINT")


def count_runs(url: str, project: str) -> tuple[int, int]:
    with psycopg.connect(url) as conn:
        runs = conn.execute("SELECT count(*) FROM oqron_runs WHERE project = %s", (project,)).fetchone()[0]
        jobs = conn.execute("SELECT count(*) FROM oqron_jobs WHERE project = %s", (project,)).fetchone()[0]
    return runs, jobs


def phase(args: argparse.Namespace, url: str, rds: redis.Redis, tag: str, record: bool) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OQRON_", "PYTHON"))}
    project = f"ab-{tag}"
    env.update({"OQRON_MODE": "postgres", "OQRON_DATABASE_URL": url, "OQRON_PROJECT": project,
                "OQRON_ENVIRONMENT": "bench", "BENCH_REDIS_URL": args.redis_url, "BENCH_KEY": f"oqab:{tag}",
                "BENCH_TARGET": str(args.jobs), "PYTHONPATH": f"{PEERS}{os.pathsep}{ROOT}",
                "PYTHONUNBUFFERED": "1"})
    reset(url)
    subprocess.run([sys.executable, "-c", ENQUEUE.format(n=args.jobs)], env=env, check=True, timeout=300)
    argv = [sys.executable, str(PEERS / "oqron_worker.py")] + ([] if record else ["--no-record-runs"])
    worker = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    done_key, last_key = f"oqab:{tag}:done", f"oqab:{tag}:last"
    try:
        deadline = time.monotonic() + 300
        mark = None
        while time.monotonic() < deadline:
            done = int(rds.get(done_key) or 0)
            if mark is None and done >= SKIP:
                pg = postgres_pids()  # now: the worker's connections are open
                mark = (time.time(), done, cpu_ticks([worker.pid]), cpu_ticks(pg))
            if done >= args.jobs and rds.exists(last_key):
                break
            if worker.poll() is not None:
                raise RuntimeError(f"worker exited: {worker.stderr.read().decode()[-2000:]}")
            time.sleep(0.005)
        else:
            raise RuntimeError("phase timed out")
        end_cpu = (cpu_ticks([worker.pid]), cpu_ticks(pg))
        last = float(rds.get(last_key))
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
    assert mark is not None
    t0, c0, w0, p0 = mark
    jobs = args.jobs - c0
    tick_us = 1e6 / os.sysconf("SC_CLK_TCK")
    runs, left = count_runs(url, project)
    want = args.jobs if record else 0
    if runs != want or left != 0:
        raise RuntimeError(f"{tag}: {runs} runs (want {want}), {left} jobs left")
    rds.delete(*[f"oqab:{tag}:{k}" for k in ("done", "first", "last", "latency")])
    return {"rate": jobs / (last - t0), "worker": (end_cpu[0] - w0) * tick_us / jobs,
            "postgres": (end_cpu[1] - p0) * tick_us / jobs}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=12)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--pg-url", default=os.environ.get("BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres"))
    parser.add_argument("--database", default="oqron_recording_cost")
    parser.add_argument("--redis-url", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0"))
    args = parser.parse_args()
    with psycopg.connect(args.pg_url, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (args.database,)).fetchone():
            conn.execute(f'CREATE DATABASE "{args.database}"')
    url = database_url(args.pg_url, args.database)
    rds = redis.Redis.from_url(args.redis_url)
    rows: list[tuple[dict[str, float], dict[str, float]]] = []
    print(f"{'pair':>4} {'with/s':>8} {'without/s':>9} {'cost':>7} {'worker us (w/wo)':>17} {'pg us (w/wo)':>13}")
    for i in range(args.pairs):
        arms = [True, False]
        random.shuffle(arms)
        got = {arm: phase(args, url, rds, f"{os.getpid()}-{i}-{int(arm)}", arm) for arm in arms}
        rec, norec = got[True], got[False]
        rows.append((rec, norec))
        cost = 1 - rec["rate"] / norec["rate"]
        print(f"{i + 1:>4} {rec['rate']:>8,.0f} {norec['rate']:>9,.0f} {cost * 100:>6.1f}% "
              f"{rec['worker']:>8.0f}/{norec['worker']:<8.0f} {rec['postgres']:>6.0f}/{norec['postgres']:<6.0f}",
              flush=True)
    costs = [1 - r["rate"] / n["rate"] for r, n in rows]
    med = statistics.median

    def col(arm: int, key: str) -> float:
        return med([pair[arm][key] for pair in rows])

    print(f"\nmedians of {len(rows)} pairs, {args.jobs} jobs each:")
    print(f"  with runs {col(0, 'rate'):,.0f} jobs/s, without {col(1, 'rate'):,.0f} jobs/s")
    print(f"  recording cost {med(costs) * 100:.1f}% (pairs from {min(costs) * 100:.1f} to {max(costs) * 100:.1f}%)")
    print(f"  worker CPU {col(0, 'worker'):.0f} vs {col(1, 'worker'):.0f} us/job, "
          f"postgres CPU {col(0, 'postgres'):.0f} vs {col(1, 'postgres'):.0f} us/job")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
