"""Where the milliseconds between ``add`` and the handler's start go, for an idle worker.

One process per mode: an in-process ``WorkerProcess`` (services off) idles on a plain
queue while this script adds ``--jobs`` jobs ``--gap`` seconds apart, one ``add`` each.
The planes' facades are wrapped (this process only) to stamp, per job: the durable
insert, the hot-plane signal, the claim loop's wake-up (its wait returning), the claim
round trip, the durable read of the claimed job, and the handler's start. Printed per
mode, the median and p99 of each step in ms, and the floor measured in the same run,
one of each per job just before its ``add``: a bare ``INSERT`` of a job-sized row
into a plain (logged) table, committed, and a bare ``LPUSH`` (the round trips a
Postgres-backed and a Redis-backed queue cannot go below).

Steps (each from the end of the previous one):

* ``insert``: the durable write of ``add`` (``add`` starts it);
* ``signal``: the hot plane's signal (0 where one call inserts and signals: a single
  ``add`` in postgres mode and in redis mode, ``queues/one_trip.py``);
* ``wake-up``: until the idle claim loop's wait returns;
* ``claim``: the claim round trip (from the wake-up to its answer);
* ``read``: the durable read of the claimed job's row (0 where the claim reads it: redis
  and postgres modes, ``worker/limited.py``);
* ``hand-off``: to the handler's first line (the slot thread's start, the run opened);
* ``total``: ``add`` called to the handler's start; ``add call``: ``add``'s own duration.

    .venv/bin/python bench/latency_breakdown.py --modes postgres,redis-postgres,redis --jobs 200
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import threading
import time
import uuid
from typing import Any

PG_URL = os.environ.get("BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
STEPS = ("insert", "signal", "wake-up", "claim", "read", "hand-off", "total", "add call")


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]


class Stamps:
    """perf_counter stamps per job id, written from the producer and the worker's threads."""

    def __init__(self) -> None:
        self.at: dict[str, dict[str, float]] = {}
        self.woke: dict[int, float] = {}  # per claim-loop thread: when its last wait returned
        self.lock = threading.Lock()

    def put(self, job_ids: list[str], name: str, when: float) -> None:
        with self.lock:
            for job_id in job_ids:
                self.at.setdefault(job_id, {}).setdefault(name, when)

    def wrap(self, engine: Any) -> None:
        hot, durable, clock = engine.hot, engine.durable, time.perf_counter
        insert_many, signal, wait, claim, get_many = (hot_fn for hot_fn in (
            durable.insert_many, hot.signal, hot.wait, hot.claim, durable.get_many))

        def stamped_insert(writes: Any, *a: Any, **k: Any) -> Any:
            writes = list(writes)
            self.put([w.id for w in writes], "insert_start", clock())
            out = insert_many(writes, *a, **k)
            self.put([w.id for w in writes], "insert", clock())
            return out

        def stamped_signal(queue: str, signals: Any, *a: Any, **k: Any) -> Any:
            out = signal(queue, signals, *a, **k)
            self.put([s.job_id for s in signals], "signal", clock())
            return out

        def stamped_wait(*a: Any, **k: Any) -> Any:
            out = wait(*a, **k)
            self.woke[threading.get_ident()] = clock()
            return out

        def stamped_claim(*a: Any, **k: Any) -> Any:
            woke = self.woke.pop(threading.get_ident(), None)
            leases = claim(*a, **k)
            ids = [le.job_id for le in leases]
            if woke is not None:
                self.put(ids, "wake-up", woke)
            self.put(ids, "claim", clock())
            return leases

        def stamped_get_many(namespace: str, ids: Any, *a: Any, **k: Any) -> Any:
            out = get_many(namespace, ids, *a, **k)
            self.put(list(ids), "read", clock())
            return out

        hot.signal, hot.wait, hot.claim = stamped_signal, stamped_wait, stamped_claim
        durable.insert_many, durable.get_many = stamped_insert, stamped_get_many
        store = durable.store
        if hasattr(store, "insert_and_signal"):  # queues/one_trip.py: the row and its signal in one call
            insert_and_signal = store.insert_and_signal

            def stamped_insert_and_signal(scope: Any, rows: Any, *a: Any, **k: Any) -> Any:
                out = insert_and_signal(scope, rows, *a, **k)
                done = clock()
                self.put([r.id for r in rows], "insert", done)
                self.put([r.id for r in rows], "signal", done)  # the signal step: 0, it is the same call
                return out

            store.insert_and_signal = stamped_insert_and_signal
        if hasattr(store, "claim_and_read"):  # worker/limited.py: the claim and the read in one call
            claim_and_read = store.claim_and_read

            def stamped_claim_and_read(*a: Any, **k: Any) -> Any:
                woke = self.woke.pop(threading.get_ident(), None)
                leases, records = claim_and_read(*a, **k)
                done, ids = clock(), [le.job_id for le in leases]
                if woke is not None:
                    self.put(ids, "wake-up", woke)
                self.put(ids, "claim", done)
                self.put(ids, "read", done)  # the read step: 0, it is the same call
                return leases, records

            store.claim_and_read = stamped_claim_and_read


class Floor:
    """A bare committed ``INSERT`` of a job-sized row into a plain (logged) table (the
    Postgres modes) and a bare ``LPUSH`` (the Redis modes), one of each per job, timed
    just before that job's ``add``: the floor under the same load as the job."""

    VALUE = '{"id": "%s", "data": {"i": 1, "to": "user-1@example.com"}, "status": "waiting"}'

    def __init__(self, mode: str, url: str) -> None:
        self.times: dict[str, list[float]] = {}
        self.conn: Any = None
        self.client: Any = None
        self.key = f"oqron-floor:{uuid.uuid4().hex}"
        if mode != "redis":
            import psycopg

            self.conn = psycopg.connect(url, autocommit=True)  # a scratch database, dropped afterwards
            self.conn.execute("CREATE TABLE floor_jobs (id text PRIMARY KEY, value jsonb)")
            self.times["INSERT"] = []
        if mode != "postgres":
            import redis

            self.client = redis.Redis.from_url(REDIS_URL)
            self.times["LPUSH"] = []

    def measure(self) -> None:
        if self.conn is not None:
            job_id = uuid.uuid4().hex
            started = time.perf_counter()
            self.conn.execute("INSERT INTO floor_jobs (id, value) VALUES (%s, %s)", (job_id, self.VALUE % job_id))
            self.times["INSERT"].append((time.perf_counter() - started) * 1000)
        if self.client is not None:
            started = time.perf_counter()
            self.client.lpush(self.key, uuid.uuid4().hex)
            self.times["LPUSH"].append((time.perf_counter() - started) * 1000)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
        if self.client is not None:
            self.client.delete(self.key)
            self.client.close()


def above_floor(totals: list[float], bare: dict[str, list[float]]) -> float:
    """The median total less the floor under it (a bare INSERT, a bare LPUSH or both)."""
    return statistics.median(totals) - sum(statistics.median(v) for v in bare.values())


def run_mode(mode: str, args: argparse.Namespace) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    from checkouts import drop_redis_project, scratch_database  # this folder: the scripts' own

    from oqronkit import Engine, OqronConfig, Registry
    from oqronkit.worker import WorkerProcess

    stamps, started = Stamps(), {}
    project = f"latency-{uuid.uuid4().hex[:8]}"
    redis_url = REDIS_URL if mode.startswith("redis") else None
    with scratch_database(PG_URL, f"oqron_latency_{uuid.uuid4().hex[:8]}") as url:
        engine = Engine(OqronConfig(mode=mode, database_url=None if mode == "redis" else url, redis_url=redis_url,
                                    project=project, environment="bench"), registry=Registry())
        done = threading.Semaphore(0)

        def handler(ctx: Any) -> None:
            started[ctx.job_id] = time.perf_counter()
            done.release()

        queue = engine.queue("latency", handler=handler)
        stamps.wrap(engine)
        worker = WorkerProcess(engine, queues=["latency"], services=False)
        thread = threading.Thread(target=worker.run, daemon=True)
        thread.start()
        floor = Floor(mode, url)
        try:
            queue.add({"warm": True})
            done.acquire(timeout=30)
            time.sleep(0.5)
            calls: dict[str, tuple[float, float]] = {}
            for i in range(args.jobs):
                time.sleep(args.gap)
                floor.measure()  # just before the add, with the worker idle as for the add
                began = time.perf_counter()
                job = queue.add({"i": i, "to": f"user-{i}@example.com"})
                calls[job.id] = (began, time.perf_counter())
                if not done.acquire(timeout=30):
                    raise SystemExit(f"{mode}: job {i} never started")
        finally:
            floor.close()
            worker.request_stop()
            thread.join(30)
            engine.close()
            if redis_url:
                drop_redis_project(redis_url, project)
    steps: dict[str, list[float]] = {name: [] for name in STEPS}
    order = ("insert", "signal", "wake-up", "claim", "read")
    for job_id, (began, ended) in calls.items():
        at = stamps.at.get(job_id, {})
        if not all(name in at for name in order) or job_id not in started:
            continue  # claimed without a wait before it (a claim loop that was not idle): not this path
        previous = began
        for name in order:
            steps[name].append((at[name] - previous) * 1000)
            previous = at[name]
        steps["hand-off"].append((started[job_id] - previous) * 1000)
        steps["total"].append((started[job_id] - began) * 1000)
        steps["add call"].append((ended - began) * 1000)
    return steps, floor.times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default="postgres,redis-postgres,redis")
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--gap", type=float, default=0.02, help="seconds between adds (the worker idles between)")
    args = parser.parse_args()
    print(f"{args.jobs} jobs {args.gap * 1000:.0f} ms apart into an idle in-process worker; ms, median / p99; "
          f"load {os.getloadavg()[0]:.1f}")
    print(f"{'mode':15} " + " ".join(f"{name:>13}" for name in STEPS) + "   floor (median)")
    for mode in args.modes.split(","):
        steps, bare = run_mode(mode, args)
        cells = [f"{statistics.median(v):6.2f}/{p99(v):<6.2f}" if v else f"{'-':>13}" for v in steps.values()]
        print(f"{mode:15} " + " ".join(f"{c:>13}" for c in cells) + "   "
              + ", ".join(f"{k} {statistics.median(v):.2f}" for k, v in bare.items())
              + f", total above it {above_floor(steps['total'], bare):.2f}"
              + f"   ({len(steps['total'])} of {args.jobs} jobs took the idle path)")
    print("floor: one bare op of each kind per job, just before its add (the same load), medians; "
          "total above it: the total's median less the floor's (the sum of its medians)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
