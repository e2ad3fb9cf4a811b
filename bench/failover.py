"""A Redis Cluster failover under load, repeated: how soon the queue drains after the
promotion, and whether every job ran exactly once (issue 39).

Each repetition starts a private local cluster (3 masters, a replica each, on free
loopback ports: tests/redis_cluster.py), adds ``--jobs`` jobs of ``--ms`` ms to one
queue (``retries=0``, the default 30 s lease) in redis-postgres mode, starts one worker
(``python -m oqronkit worker``), SIGKILLs the master holding the queue's slot once
``--kill-at`` jobs are done, and waits for the cluster to promote its replica by itself
(``cluster-node-timeout`` 2 s). It prints per repetition: the promotion's delay after the
kill, the drain (no job row left, nothing ready, delayed or leased) after the promotion,
jobs run once / more than once / never, dead letters, the leases the worker took back
(``worker.leases_recovered``: a claim or an ack with no reply) and the leases the rescuer
returned uncounted (``rescuer.returned_uncounted``).
Not in the pass/fail suite (pytest never collects bench/); slow: about 15 s a repetition.

Usage (from the repository root)::

    .venv/bin/python bench/failover.py --repetitions 20

The worker imports this file as its app (``--import failover``): the queue below.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import oqronkit

ROOT = Path(__file__).resolve().parent.parent
QUEUE = "failover"

failover = oqronkit.queue(QUEUE, concurrency=8, retries=0)
_lock = threading.Lock()


@failover.handler
def failover_job(ctx):
    """Sleeps ``data["ms"]`` and appends its job id to this process's record of runs."""
    time.sleep(ctx.data["ms"] / 1000)
    with _lock, open(os.path.join(os.environ["BENCH_RUN_DIR"], f"runs-{os.getpid()}.txt"), "a") as out:
        out.write(f"{ctx.job_id}\n")


def repetition(args: argparse.Namespace, n: int, database_url: str) -> dict[str, float | int]:
    from oqronkit import Engine, OqronConfig, Registry
    from oqronkit.backends.redis.keys import queue_keys
    from oqronkit.backends.types import Scope
    from oqronkit.clock import now_ms
    from tests.redis_cluster import local_cluster

    project = f"failover-{os.getpid()}-{n}"
    with local_cluster() as cluster, tempfile.TemporaryDirectory(prefix="oqron-failover-") as tmp:
        config = OqronConfig(mode="redis-postgres", database_url=database_url, redis_url=cluster.url,
                             project=project)
        engine = Engine(config, registry=Registry())
        queue = engine.queue(QUEUE, retries=0)
        ids = {job.id for job in queue.add_bulk([{"ms": args.ms} for _ in range(args.jobs)])}
        env = {**os.environ, "OQRON_MODE": config.mode, "OQRON_DATABASE_URL": database_url,
               "OQRON_REDIS_URL": cluster.url, "OQRON_PROJECT": project, "BENCH_RUN_DIR": tmp,
               "PYTHONPATH": f"{ROOT / 'bench'}{os.pathsep}{ROOT}"}
        log_path = Path(tmp) / "worker.log"
        with open(log_path, "wb") as log:
            worker = subprocess.Popen([sys.executable, "-m", "oqronkit", "worker", "--import", "failover",
                                       "--log-level", "warning"], cwd=ROOT, env=env, stdout=log,
                                      stderr=subprocess.STDOUT)
        try:
            left = lambda: engine.durable.count(f"queue_job:{QUEUE}")  # noqa: E731
            deadline = time.monotonic() + 120
            while left() > args.jobs - args.kill_at:
                if time.monotonic() > deadline or worker.poll() is not None:
                    raise RuntimeError(f"the worker did not get going: {log_path.read_text()[-2000:]}")
                time.sleep(0.01)
            left_at_kill = left()
            victim = cluster.master_of(queue_keys(Scope(project, config.environment), QUEUE).ready)
            killed = time.monotonic()
            cluster.kill(victim)
            cluster.wait_failover(victim)
            promoted = time.monotonic()

            def drained() -> bool:
                try:
                    depths = engine.hot.depths(QUEUE, now_ms())
                    return left() == 0 and depths.ready == depths.delayed == depths.active == 0
                except oqronkit.OqronError:  # the client meets the dead master until it re-reads the topology
                    return False

            while not drained():
                if time.monotonic() - promoted > args.timeout:
                    break
                time.sleep(0.02)
            drain_s = time.monotonic() - promoted
        finally:
            worker.terminate()
            worker.wait(30)
            dead = engine.durable.count(f"queue_dlq:{QUEUE}")
            engine.close()
            _drop_project(database_url, project)
        runs: Counter[str] = Counter()
        for path in Path(tmp).glob("runs-*.txt"):
            runs.update(path.read_text().split())
        text = log_path.read_text(errors="replace")
        bad = any(runs[job_id] != 1 for job_id in ids) or dead or drain_s > args.bound
        if bad and args.logs is not None:  # the worker's log of a repetition worth reading
            args.logs.mkdir(parents=True, exist_ok=True)
            (args.logs / f"worker-{n + 1}.log").write_text(text)
    return {
        "left_at_kill": left_at_kill, "promotion_s": promoted - killed, "drain_s": drain_s,
        "once": sum(1 for job_id in ids if runs[job_id] == 1), "twice": sum(1 for job_id in ids if runs[job_id] > 1),
        "never": sum(1 for job_id in ids if runs[job_id] == 0), "dead": dead,
        "recovered": sum(int(found) for found in re.findall(r"(\d+) lease\(s\) of \S+ were this worker's", text)),
        "uncounted": text.count("returned uncounted"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--ms", type=float, default=2.0, help="each job's sleep")
    parser.add_argument("--kill-at", type=int, default=1000, help="jobs done when the master is killed")
    parser.add_argument("--timeout", type=float, default=60.0, help="longest wait for the drain (s)")
    parser.add_argument("--bound", type=float, default=5.0, help="the drain bound after the promotion (s)")
    parser.add_argument("--logs", type=Path, default=None,
                        help="keep here the worker's log of each repetition that missed a verdict")
    parser.add_argument("--database-url", default=os.environ.get(
        "BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/oqron_failover_bench"))
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    _ensure_database(args.database_url)
    print(f"{'rep':>3} {'left':>5} {'promo s':>7} {'drain s':>7} {'once':>5} {'twice':>5} {'never':>5} "
          f"{'dead':>4} {'recov':>5} {'uncnt':>5}", flush=True)
    rows = []
    for n in range(args.repetitions):
        row = repetition(args, n, args.database_url)
        rows.append(row)
        print(f"{n + 1:>3} {row['left_at_kill']:>5} {row['promotion_s']:>7.2f} {row['drain_s']:>7.2f} "
              f"{row['once']:>5} {row['twice']:>5} {row['never']:>5} {row['dead']:>4} {row['recovered']:>5} "
              f"{row['uncounted']:>5}", flush=True)
    within = sum(1 for row in rows if row["drain_s"] <= args.bound)
    exact = sum(1 for row in rows if row["once"] == args.jobs and row["dead"] == 0)
    drains = [row["drain_s"] for row in rows]
    print(f"\n{within} of {len(rows)} drained within {args.bound:.0f} s of the promotion (median "
          f"{statistics.median(drains):.2f} s, max {max(drains):.2f} s); every job exactly once and no dead "
          f"letter in {exact} of {len(rows)}; {os.cpu_count()} cores")
    return 0 if within == exact == len(rows) else 1


def _drop_project(url: str, project: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for table in ("oqron_jobs", "oqron_runs", "oqron_records"):  # fixed names, not input
            conn.execute(f"DELETE FROM {table} WHERE project = %s", (project,))


def _ensure_database(url: str) -> None:
    import psycopg

    base, _, name = url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')  # the bench's own database name, not user input


if __name__ == "__main__":
    sys.exit(main())
