"""What Django's ``@task`` costs a worker against our plain queue API: interleaved rounds.

``bench/throughput.py`` compares ``django-tasks-oqron`` with ``oqron-postgres`` once per
repetition, each phase against whatever else the machine does then. This script runs
short rounds of the two (and, with ``--against DIR``, the tasks worker of another
checkout too), in a random order within each round, and reports per arm:

* ``jobs/s``: wall time per job from the 1,000th completion to the last (start-up left out);
* ``start s``: from the worker's spawn to its first completion;
* ``worker us/job``: CPU time (``/proc``) of the worker process over the timed interval.

Both arms get ``--jobs`` jobs of ``throughput.py``'s payload added with ``add_bulk`` into
emptied tables (the tasks arm: the payloads ``Task.enqueue`` writes, built by
``oqronkit.contrib.django.tasks.payload``, so the two arms' tables are filled alike; ``--single``
enqueues the tasks with ``bench_task.enqueue`` instead, one call each, as throughput.py
does). The plain arm is ``python -m oqronkit worker --import oqron_tasks --queues bench``,
the tasks arm ``manage.py runworker --queues tasks.default`` with
``bench/peers/djoqron_settings.py``: the two commands throughput.py runs.

Usage (from the repository root, with the project's virtualenv)::

    .venv/bin/python bench/tasks_cost.py --rounds 8 --jobs 10000
    .venv/bin/python bench/tasks_cost.py --rounds 8 --against /tmp/base   # a worktree of an older commit
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
import redis
from recording_cost import SKIP, cpu_ticks, reset  # this folder: the scripts' own
from throughput import with_database

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench" / "peers"))
from common import keys  # noqa: E402 - the phase's Redis key names, as the task body writes them

ENQUEUE_PLAIN = """
import oqron_tasks
from common import payload
from oqronkit import get_engine
n = int({n})
for start in range(0, n, 5000):
    oqron_tasks.bench.add_bulk([payload(i) for i in range(start, min(n, start + 5000))])
get_engine().close()
"""
ENQUEUE_TASKS = """
import django
django.setup()
from common import payload as job
from djoqron_tasks import bench_task
from oqronkit.contrib.django import engine
from oqronkit.contrib.django.tasks import payload
from oqronkit.clock import now_ms
n, single = int({n}), {single}
if single:
    for i in range(n):
        bench_task.enqueue(**job(i))
else:
    queue = bench_task.get_backend().queue_for(bench_task.queue_name)
    for start in range(0, n, 5000):
        queue.add_bulk([payload.build(bench_task, [], job(i), backend=bench_task.backend, enqueued_ms=now_ms(),
                                      options={{}}) for i in range(start, min(n, start + 5000))])
engine.get_engine().close()
"""


def phase(args: argparse.Namespace, url: str, rds: redis.Redis, tag: str, arm: str, root: Path) -> dict[str, float]:
    """One timed processing phase of ``arm`` ("plain" or "tasks") from checkout ``root``."""
    peers = root / "bench" / "peers"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OQRON_", "PYTHON", "DJANGO_"))}
    project = f"tc-{tag}"
    env.update({"OQRON_MODE": "postgres", "OQRON_DATABASE_URL": url, "OQRON_PROJECT": project,
                "OQRON_ENVIRONMENT": "bench", "BENCH_REDIS_URL": args.redis_url, "BENCH_KEY": f"oqtc:{tag}",
                "BENCH_TARGET": str(args.jobs), "PYTHONPATH": f"{peers}{os.pathsep}{root}",
                "PYTHONUNBUFFERED": "1", "DJANGO_SETTINGS_MODULE": "djoqron_settings"})
    reset(url)
    if arm == "plain":
        enqueue = ENQUEUE_PLAIN.format(n=args.jobs)
        argv = [sys.executable, "-m", "oqronkit", "worker", "--import", "oqron_tasks", "--queues", "bench",
                "--log-level", "warning"]
    else:
        enqueue = ENQUEUE_TASKS.format(n=args.jobs, single=args.single)
        argv = [sys.executable, str(root / "manage.py"), "runworker", "--queues", "tasks.default", "--log-level",
                "warning"]
    subprocess.run([sys.executable, "-c", enqueue], env=env, cwd=peers, check=True, timeout=600)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE")  # as throughput.py does between enqueue and processing
    names = keys(f"oqtc:{tag}")
    with tempfile.TemporaryFile() as log:
        spawned = time.time()
        worker = subprocess.Popen(argv, env=env, cwd=peers, stdout=log, stderr=subprocess.STDOUT,
                                  start_new_session=True)
        try:
            deadline = time.monotonic() + 300
            mark = None
            while time.monotonic() < deadline:
                done = int(rds.get(names["done"]) or 0)
                if mark is None and done >= SKIP:
                    mark = (time.time(), done, cpu_ticks([worker.pid]))
                if done >= args.jobs and rds.exists(names["last"]):
                    break
                if worker.poll() is not None:
                    log.seek(0)
                    raise RuntimeError(f"worker exited: {log.read().decode(errors='replace')[-2000:]}")
                time.sleep(0.005)
            else:
                raise RuntimeError("phase timed out")
            end_cpu = cpu_ticks([worker.pid])
            last = float(rds.get(names["last"]) or 0)
            first = float(rds.get(names["first"]) or 0)
        finally:
            worker.send_signal(signal.SIGTERM)
            try:
                worker.wait(30)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
    assert mark is not None
    t0, c0, w0 = mark
    jobs = args.jobs - c0
    rds.delete(*names.values())
    return {"rate": jobs / (last - t0), "start": first - spawned, "from_spawn": args.jobs / (last - spawned),
            "worker": (end_cpu - w0) * 1e6 / os.sysconf("SC_CLK_TCK") / jobs}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--single", action="store_true", help="enqueue the tasks one Task.enqueue call each")
    parser.add_argument("--against", type=Path, default=None,
                        help="another checkout: its tasks worker is a third arm of every round")
    parser.add_argument("--pg-url", default=os.environ.get("BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres"))
    parser.add_argument("--database", default="oqron_tasks_cost")
    parser.add_argument("--redis-url", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0"))
    args = parser.parse_args()
    with psycopg.connect(args.pg_url, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (args.database,)).fetchone():
            conn.execute(f'CREATE DATABASE "{args.database}"')
    url = with_database(args.pg_url, args.database)
    rds = redis.Redis.from_url(args.redis_url)
    arms: list[tuple[str, str, Path]] = [("plain", "plain", ROOT), ("tasks", "tasks", ROOT)]
    if args.against is not None:
        arms.append(("tasks-against", "tasks", args.against.resolve()))
    rows: list[dict[str, dict[str, float]]] = []
    print(f"{'round':>5} {'load':>5} " + " ".join(f"{label + ' jobs/s, us/job, start s':>36}" for label, _, _ in arms))
    for i in range(args.rounds):
        load = os.getloadavg()[0]
        got = {label: phase(args, url, rds, f"{os.getpid()}-{i}-{label}", arm, root)
               for label, arm, root in random.sample(arms, len(arms))}
        rows.append(got)
        print(f"{i + 1:>5} {load:>5.2f} " + " ".join(
            f"{got[label]['rate']:>20,.0f} {got[label]['worker']:>7.1f} {got[label]['start']:>6.2f}"
            for label, _, _ in arms), flush=True)
    med = statistics.median
    print(f"\nmedians of {len(rows)} rounds, {args.jobs} jobs each (load now {os.getloadavg()[0]:.2f}):")
    for label, _, _ in arms:
        print(f"  {label:>14}: {med([r[label]['rate'] for r in rows]):>7,.0f} jobs/s excl start-up, "
              f"{med([r[label]['from_spawn'] for r in rows]):>7,.0f} from spawn, worker "
              f"{med([r[label]['worker'] for r in rows]):.1f} us/job, first completion after "
              f"{med([r[label]['start'] for r in rows]):.2f} s")
    for label, _, _ in arms[1:]:
        excl = [r[label]["rate"] / r["plain"]["rate"] for r in rows]
        spawn = [r[label]["from_spawn"] / r["plain"]["from_spawn"] for r in rows]
        print(f"  {label} / plain, median of per-round ratios: {med(excl):.3f} excl start-up "
              f"({min(excl):.3f}-{max(excl):.3f}), {med(spawn):.3f} from spawn ({min(spawn):.3f}-{max(spawn):.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
