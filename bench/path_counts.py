"""What one plain job costs a worker, counted rather than timed: Python function calls,
Postgres transactions and Redis commands sent, per job. Counts do not move with the
machine's load, so two revisions compare exactly (``bench/guard.py`` runs this for each
arm); the CPU time per job in the same run is printed beside them.

One process, this checkout's ``oqronkit`` or the one on ``PYTHONPATH``: ``--jobs`` no-op
jobs of ``throughput.py``'s payload added in bulk to a queue of concurrency 5, then an
in-process ``WorkerProcess`` in burst mode, services off, drains them with a profile
hook on every thread counting calls (Python functions and builtins). Transactions are
``pg_stat_database``'s commits and rollbacks of the database (give the process one of
its own), read before and after with a pause for the statistics to be flushed;
Redis commands are the sends of redis-py's connections (a pipeline counts once: one round
trip). Prints one JSON line.

    .venv/bin/python bench/path_counts.py postgres postgresql://postgres@127.0.0.1/mydb
    .venv/bin/python bench/path_counts.py redis-postgres postgresql://... --redis-url redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from collections import Counter
from typing import Any

import psycopg
import redis.connection

STATS_FLUSH = 1.2  # s: a backend reports its counters when idle, at most every second


def transactions(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT xact_commit + xact_rollback FROM pg_stat_database "
                           "WHERE datname = current_database()").fetchone()
    return int(row[0]) if row else 0


class Sends:
    """Counts redis-py's packed sends (one per command, one per pipeline)."""

    def __init__(self) -> None:
        self.count = 0
        cls = redis.connection.AbstractConnection
        original = cls.send_packed_command

        def send(conn: Any, command: Any, check_health: bool = True) -> None:
            self.count += 1
            original(conn, command, check_health)

        cls.send_packed_command = send  # type: ignore[method-assign]


class Calls:
    """A profile hook on every thread counting calls, started and stopped around the work;
    with ``by_function``, per function too (``--top``)."""

    def __init__(self, by_function: bool) -> None:
        self.counts: Counter[str] = Counter()
        self.functions: Counter[str] = Counter()
        self.by_function = by_function

    def hook(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            self.counts["py"] += 1
            if self.by_function:
                code = frame.f_code
                self.functions[f"{code.co_filename.rpartition('oqronkit/')[2]}:{code.co_qualname}"] += 1
        elif event == "c_call":
            self.counts["c"] += 1

    def start(self) -> None:
        threading.setprofile_all_threads(self.hook)
        sys.setprofile(self.hook)

    def stop(self) -> None:
        threading.setprofile_all_threads(None)
        sys.setprofile(None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("postgres", "redis-postgres"))
    parser.add_argument("database_url", help="a database of this run's own (its transactions are counted)")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--top", type=int, default=0, help="also print the N Python functions called most per job")
    args = parser.parse_args()
    from checkouts import drop_redis_project  # this folder: the scripts' own

    from oqronkit import Engine, OqronConfig, Registry
    from oqronkit.worker import WorkerProcess

    sends, calls = Sends(), Calls(by_function=args.top > 0)
    project = f"counts-{uuid.uuid4().hex[:8]}"
    redis_url = args.redis_url if args.mode == "redis-postgres" else None
    engine = Engine(OqronConfig(mode=args.mode, database_url=args.database_url, redis_url=redis_url,
                                project=project, environment="bench"), registry=Registry())
    try:
        engine.queue("plain", handler=lambda ctx: None, concurrency=5)
        queue = engine.get_queue("plain")
        for start in range(0, args.jobs, 1000):
            chunk = range(start, min(start + 1000, args.jobs))
            queue.add_bulk([{"i": i, "to": f"user-{i}@example.com"} for i in chunk])
        worker = WorkerProcess(engine, queues=["plain"], burst=True, services=False, poll_interval=0.05)
        time.sleep(STATS_FLUSH)
        before, sent = transactions(args.database_url), sends.count
        cpu = time.process_time()
        calls.start()
        worker.run()
        calls.stop()
        cpu = time.process_time() - cpu
        sent = sends.count - sent
        left = engine.durable.count("queue_job:plain")
    finally:
        engine.close()
        if redis_url:
            drop_redis_project(redis_url, project)
    time.sleep(STATS_FLUSH)
    xacts = transactions(args.database_url) - before - 1  # less the first reading's own
    if left:
        raise SystemExit(f"{left} job(s) left")
    n = args.jobs
    for name, count in calls.functions.most_common(args.top):
        print(f"{count / n:8.2f}  {name}")
    print(json.dumps({"python_calls": calls.counts["py"] / n, "builtin_calls": calls.counts["c"] / n,
                      "pg_transactions": xacts / n, "redis_sends": sent / n, "cpu_us_profiled": cpu / n * 1e6}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
