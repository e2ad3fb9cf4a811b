"""Postgres mode through a held xmin horizon: claim and settle latency, second by second.

Starts a private PostgreSQL (``initdb`` into a temporary directory, a free loopback
port: a session idle in transaction on the shared server would bloat everyone's
tables), one worker process (``--role worker``: a queue of ``--concurrency`` slots whose
jobs sleep ``--job-ms``) and a producer in this process offering ``--rate`` jobs a second.
Each repetition has three phases:

* ``before``: the steady state;
* ``held``: a session (``application_name`` ``bloat-holder``) that BEGINs at REPEATABLE
  READ, reads ``txid_current()`` and ``oqron_jobs``, and sleeps ``--held`` seconds, so no
  dead row anywhere in the cluster can be removed;
* ``after``: the session gone, until autovacuum or the engine's upkeep has caught up.

The worker times every ``claim`` of the hot plane and every settle
(``apply_and_release``) and writes, each second, the count, p50 and p99 of both and the
jobs completed; this script prints per phase the worst second's p99, the lowest
second's throughput, and whether every second's claim p99 stayed under ``--p99-ms``.

Usage (from the repository root, with the project's virtualenv; root, as the test
servers are started as the postgres user)::

    .venv/bin/python bench/bloat.py --reps 4 --rate 400 --held 60
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

QUEUE = "bloat"
TABLES = ("oqron_jobs", "oqron_runs", "oqron_hot_jobs")


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# -- the worker process ---------------------------------------------------------------

def run_worker(args: argparse.Namespace) -> int:
    """A WorkerProcess whose claims and settles are timed, one JSON line a second."""
    import signal

    import oqronkit
    from oqronkit import get_engine
    from oqronkit.backends.postgres.hot import PostgresHotPlane
    from oqronkit.backends.postgres.store import PostgresDurableStore
    from oqronkit.worker import WorkerProcess

    lock = threading.Lock()
    window: dict[str, list[float]] = {"claim": [], "settle": []}
    done = [0]

    def timed(kind: str, method: Any) -> Any:
        def wrapper(*a: Any, **k: Any) -> Any:
            start = time.perf_counter()
            try:
                return method(*a, **k)
            finally:
                elapsed = (time.perf_counter() - start) * 1000
                with lock:
                    window[kind].append(elapsed)
        return wrapper

    PostgresHotPlane.claim = timed("claim", PostgresHotPlane.claim)  # type: ignore[method-assign]
    PostgresDurableStore.apply_and_release = timed(  # type: ignore[method-assign]
        "settle", PostgresDurableStore.apply_and_release)

    job_s = args.job_ms / 1000

    def handle(ctx: Any) -> None:
        time.sleep(job_s)
        with lock:
            done[0] += 1

    oqronkit.queue(QUEUE, handler=handle, concurrency=args.concurrency)
    engine = get_engine()
    process = WorkerProcess(engine, queues=[QUEUE], concurrency=args.concurrency)
    out = open(f"{args.stats}.{os.getpid()}", "a", buffering=1)  # noqa: SIM115 - closed with the process

    def report() -> None:
        while True:
            time.sleep(1.0 - time.time() % 1.0)
            with lock:
                claims, settles, completed = window["claim"], window["settle"], done[0]
                window["claim"], window["settle"], done[0] = [], [], 0
            out.write(json.dumps({"t": round(time.time()), "done": completed,
                                  "claim": [round(v, 3) for v in claims],
                                  "settle": [round(v, 3) for v in settles]}) + "\n")

    threading.Thread(target=report, daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: process.request_stop())
    try:
        process.run()
    finally:
        engine.close()
    return 0


# -- the harness ----------------------------------------------------------------------

class Producer(threading.Thread):
    """Adds ``rate`` jobs a second in ticks of 10 ms, counting what it could not offer."""

    def __init__(self, rate: int) -> None:
        super().__init__(daemon=True)
        self.rate = rate
        self.stop = threading.Event()
        self.added = 0
        self.behind = 0.0

    def run(self) -> None:
        import oqronkit

        queue = oqronkit.queue(QUEUE)
        start = time.monotonic()
        while not self.stop.is_set():
            due = int((time.monotonic() - start) * self.rate)
            if due > self.added:
                n = min(due - self.added, self.rate)  # never more than a second's worth at once
                queue.add_bulk([{"i": self.added + i} for i in range(n)])
                self.added += n
            self.behind = due / self.rate - self.added / self.rate
            self.stop.wait(0.01)


def table_health(url: str) -> dict[str, tuple[int, int]]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT relname, n_live_tup, n_dead_tup FROM pg_stat_user_tables "
                            "WHERE relname = ANY(%s)", (list(TABLES),)).fetchall()
    return {name: (live, dead) for name, live, dead in rows}


def analyze(url: str) -> None:
    """Planner statistics, as a server running for a minute has them (autovacuum, or the
    leader's upkeep): without, a fresh table's estimates choose other plans."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        names = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE tablename LIKE 'oqron%%'")]
        for name in names:
            conn.execute(f'ANALYZE "{name}"')


def hold_horizon(url: str, seconds: float, stop: threading.Event) -> None:
    import psycopg

    with psycopg.connect(url, application_name="bloat-holder") as conn:
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        conn.execute("SELECT txid_current()")
        conn.execute("SELECT count(*) FROM oqron_jobs")
        stop.wait(seconds)
        conn.rollback()


def explain_slow_statements(url: str, ms: float) -> None:
    """auto_explain (ANALYZE, BUFFERS) in the private server's log for statements slower than ``ms``."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("LOAD 'auto_explain'")  # its settings are known only once loaded
        for name, value in (("session_preload_libraries", "auto_explain"), ("auto_explain.log_min_duration", ms),
                            ("auto_explain.log_analyze", "on"), ("auto_explain.log_buffers", "on")):
            conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        conn.execute("SELECT pg_reload_conf()")


def summarise(rows: list[dict[str, Any]], limit_ms: float) -> dict[str, Any]:
    if not rows:
        return {"seconds": 0}
    return {
        "seconds": len(rows),
        "claim_p50": statistics.median(r["claim_p50"] for r in rows),
        "worst_claim_p99": max(r["claim_p99"] for r in rows),
        "worst_settle_p99": max(r["settle_p99"] for r in rows),
        "min_jobs_s": min(r["done"] for r in rows),
        "median_jobs_s": statistics.median(r["done"] for r in rows),
        "seconds_over": sum(1 for r in rows if r["claim_p99"] >= limit_ms),
    }


def repetition(args: argparse.Namespace, url: str, rep: int, stats: Path) -> list[tuple[str, dict[str, Any]]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OQRON_")}
    env.update({"OQRON_MODE": "postgres", "OQRON_DATABASE_URL": url, "OQRON_PROJECT": f"bloat{rep}",
                "OQRON_ENVIRONMENT": "bench", "PYTHONPATH": str(ROOT)})
    os.environ.update({k: v for k, v in env.items() if k.startswith("OQRON_")})
    from oqronkit.engine import configure

    log = open(stats.with_suffix(".log"), "a")  # noqa: SIM115 - the workers' stderr, read on failure
    workers = [subprocess.Popen(
        [sys.executable, __file__, "--role", "worker", "--stats", str(stats), "--concurrency",
         str(args.concurrency // args.processes), "--job-ms", str(args.job_ms)],
        env=env, stdout=subprocess.DEVNULL, stderr=log) for _ in range(args.processes)]
    producer = Producer(args.rate)
    marks: list[tuple[str, float]] = []
    try:
        time.sleep(args.warmup)
        engine = configure()
        producer.start()
        marks.append(("before", time.time()))
        time.sleep(min(5.0, args.before))
        analyze(url)  # with jobs in the tables
        time.sleep(max(0.0, args.before - 5.0))
        stop = threading.Event()
        holder = threading.Thread(target=hold_horizon, args=(url, args.held, stop), daemon=True)
        marks.append(("held", time.time()))
        holder.start()
        while holder.is_alive():  # a join with a timeout: Ctrl-C still stops the run
            holder.join(0.5)
        marks.append(("after", time.time()))
        print(f"  rep {rep}: tables at the end of the hold {table_health(url)}", flush=True)
        time.sleep(args.after)
        marks.append(("end", time.time()))
    finally:
        producer.stop.set()
        producer.join()
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait(60)
        engine.close()
    if producer.behind > 1:
        print(f"  rep {rep}: the producer fell {producer.behind:.1f} s behind the offered rate", flush=True)
    by_second: dict[int, dict[str, Any]] = {}
    for line in (line for part in stats.parent.glob(stats.name + ".*") for line in part.read_text().splitlines()):
        part = json.loads(line)
        row = by_second.setdefault(part["t"], {"t": part["t"], "done": 0, "claim": [], "settle": []})
        row["done"] += part["done"]
        row["claim"] += part["claim"]
        row["settle"] += part["settle"]
    rows = [{"t": r["t"], "done": r["done"], "claims": len(r["claim"]),
             "claim_p50": percentile(r["claim"], 0.5), "claim_p99": percentile(r["claim"], 0.99),
             "claim_max": max(r["claim"], default=0.0), "settles": len(r["settle"]),
             "settle_p50": percentile(r["settle"], 0.5), "settle_p99": percentile(r["settle"], 0.99)}
            for _, r in sorted(by_second.items())]
    out = []
    for (phase, start), (_, end) in itertools.pairwise(marks):
        picked = [r for r in rows if start + 1 <= r["t"] <= end]
        out.append((phase, summarise(picked, args.p99_ms)))
    if args.seconds:
        for r in rows:
            print(f"    {r['t']} done {r['done']} claims {r['claims']} p50 {r['claim_p50']:.1f} "
                  f"p99 {r['claim_p99']:.1f} settles {r['settles']} p50 {r['settle_p50']:.1f} "
                  f"p99 {r['settle_p99']:.1f}", flush=True)
    for part in stats.parent.glob(stats.name + ".*"):
        part.unlink()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--role", choices=("harness", "worker"), default="harness")
    parser.add_argument("--stats", default="")
    parser.add_argument("--rate", type=int, default=400, help="jobs offered a second")
    parser.add_argument("--concurrency", type=int, default=32, help="slots, over every worker process")
    parser.add_argument("--processes", type=int, default=1, help="worker processes")
    parser.add_argument("--job-ms", type=float, default=1.0)
    parser.add_argument("--reps", type=int, default=4)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--before", type=float, default=20.0)
    parser.add_argument("--held", type=float, default=60.0)
    parser.add_argument("--after", type=float, default=60.0)
    parser.add_argument("--p99-ms", type=float, default=100.0)
    parser.add_argument("--seconds", action="store_true", help="print every second's figures too")
    parser.add_argument("--explain-ms", type=float, default=0,
                        help="log plans of statements slower than this to <tmp>/bloat-server.log (auto_explain)")
    parser.add_argument("--url", default="", help="an existing private server instead of a new one")
    args = parser.parse_args()
    if args.role == "worker":
        return run_worker(args)

    from tests.dedicated import dedicated_postgres

    with tempfile.TemporaryDirectory() as tmp, dedicated_postgres() as server:
        url = args.url or server.url
        if args.explain_ms:
            explain_slow_statements(url, args.explain_ms)
        print(f"private server {url}, {args.rate} jobs/s offered, {args.concurrency} slots, {args.job_ms} ms jobs",
              flush=True)
        print(f"{'rep':>3} {'phase':<7} {'secs':>4} {'claim p50':>9} {'worst p99':>9} {'settle p99':>10} "
              f"{'min jobs/s':>10} {'med jobs/s':>10} {'secs >= limit':>13}", flush=True)
        failed = 0
        for rep in range(1, args.reps + 1):
            for phase, s in repetition(args, url, rep, Path(tmp) / f"rep{rep}.jsonl"):
                if not s["seconds"]:
                    continue
                failed += s["seconds_over"]
                print(f"{rep:>3} {phase:<7} {s['seconds']:>4} {s['claim_p50']:>9.2f} {s['worst_claim_p99']:>9.1f} "
                      f"{s['worst_settle_p99']:>10.1f} {s['min_jobs_s']:>10} {s['median_jobs_s']:>10.0f} "
                      f"{s['seconds_over']:>13}", flush=True)
        print(f"seconds with claim p99 >= {args.p99_ms:g} ms: {failed}", flush=True)
        if args.explain_ms:
            shutil.copy(server.datadir / "server.log", Path(tmp).parent / "bloat-server.log")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
