"""CPU cost of the metrics history's rollup at 10,000 runs a minute on PostgreSQL.

    .venv/bin/python bench/rollups.py [--database-url URL] [--runs-per-minute 10000]
        [--minutes 3] [--repeat 3] [--keep]

1. Creates a database of its own (``oqron_bench_rollups`` beside the URL's) and the
   engine's schema, and writes ``--minutes`` minutes of ``--runs-per-minute`` runs through
   the durable plane, shaped as a worker writes them (new_run / finish_run, an input, an
   output and two log lines): 40 queues, one run in 20 failed, one in 10 a retry, one in
   8 a topic delivery, one in 100 still running.
2. Rolls each minute ``--repeat`` times (a rollup is idempotent: each time recomputes
   it from its runs: one startedAt index range read, paged by 1,000), then merges the
   minutes into their hour once; then finishes the running ones and times the pass that
   moves them (by id, without reading the minute again). Measures the process's CPU time (``time.process_time``)
   and the database's: the user+system CPU of this database's backends, read from
   /proc/<pid>/stat (PostgreSQL on this machine; "n/a" otherwise).
3. Prints the median per minute rolled, and the share of one core it takes when it runs
   once a minute; PASS under 1%. Then the wall time of ``Engine.metrics_history`` for one
   queue and each range, over 35 days of synthetic buckets (the board's chart reads).

Exit status 0 on PASS. Drops its database unless ``--keep``. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TARGET_SHARE = 1.0  # percent of one core
BASE = 1_765_000_800_000  # a UTC minute and hour start
MINUTE_MS = 60_000
DB_NAME = "oqron_bench_rollups"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=os.environ.get("OQRON_TEST_DATABASE_URL",
                                                                 "postgresql://postgres@127.0.0.1:5432/test"))
    parser.add_argument("--runs-per-minute", type=int, default=10_000)
    parser.add_argument("--minutes", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    import psycopg

    admin_url = args.database_url
    url = admin_url.rsplit("/", 1)[0] + "/" + DB_NAME
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB_NAME}")  # our own fixed name, not input
        conn.execute(f"CREATE DATABASE {DB_NAME}")
    try:
        return run(url, args)
    finally:
        if not args.keep:
            with psycopg.connect(admin_url, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")


def run(url: str, args: argparse.Namespace) -> int:
    from oqronkit import DurablePlane, RecordWrite
    from oqronkit.backends.postgres import PostgresDurableStore
    from oqronkit.history.rollup import Retention, RollupReport, merge_into, roll_minute

    durable = DurablePlane(PostgresDurableStore(url), project="bench", environment="production")
    durable.start()
    started = time.perf_counter()
    for minute in range(args.minutes):
        batch: list[RecordWrite] = []
        for n in range(args.runs_per_minute):
            run = make_run(n, BASE + minute * MINUTE_MS + n * MINUTE_MS // args.runs_per_minute)
            batch.append(RecordWrite("runs", run["id"], run, new=True))
            if len(batch) == 1000:
                durable.put_many(batch)
                batch = []
        durable.put_many(batch)
    print(f"seeded {args.minutes * args.runs_per_minute:,} runs in {time.perf_counter() - started:.1f} s")
    with psycopg_connect(url) as conn:
        conn.execute("VACUUM ANALYZE oqron_runs")
    retention = Retention()
    process_ms, database_ms = [], []
    for _ in range(args.repeat):
        for minute in range(args.minutes):
            report = RollupReport()
            cpu, db = process_cpu_ms(), database_cpu_ms(url)
            roll_minute(durable, BASE + minute * MINUTE_MS, retention, report)
            process_ms.append(process_cpu_ms() - cpu)
            after = database_cpu_ms(url)
            if db is not None and after is not None:
                database_ms.append(after - db)
            assert report.runs == args.runs_per_minute, report
    settle_ms = time_settles(durable, args)
    cpu = process_cpu_ms()
    merge_into(durable, "hour", BASE, retention)
    hour_ms = process_cpu_ms() - cpu
    reads = time_reads(durable, url, args.repeat * 3)
    durable.close()
    mine = statistics.median(process_ms)
    theirs = statistics.median(database_ms) if database_ms else None
    total = mine + (theirs or 0.0)
    share = total / MINUTE_MS * 100
    print(f"rollup of one minute of {args.runs_per_minute:,} runs, median of {len(process_ms)}:")
    print(f"  process CPU   {mine:8.1f} ms   (min {min(process_ms):.1f}, max {max(process_ms):.1f})")
    print(f"  database CPU  {'n/a' if theirs is None else f'{theirs:8.1f} ms'}"
          + (f"   (min {min(database_ms):.1f}, max {max(database_ms):.1f})" if database_ms else ""))
    print(f"  hour merge    {hour_ms:8.1f} ms process CPU ({args.minutes} minute(s) of buckets)")
    print(f"  open runs     {settle_ms:8.1f} ms process CPU to settle a minute's {args.runs_per_minute // 100} "
          "finished long runs by id (median)")
    for span, (points, median) in reads.items():
        print(f"  history read  {span:>4}: {points:5d} buckets in {median:6.1f} ms (median, Engine.metrics_history)")
    verdict = "PASS" if share < TARGET_SHARE else "FAIL"
    print(f"{verdict}: {total:.1f} ms of CPU a minute = {share:.2f}% of one core (target < {TARGET_SHARE}%)")
    return 0 if verdict == "PASS" else 1


def time_settles(durable, args: argparse.Namespace) -> float:
    """Finish each minute's open runs, then time the pass that moves them (settle.py: by id)."""
    from oqronkit import RecordWrite
    from oqronkit.history.rollup import RollupReport
    from oqronkit.history.settle import settle_minute
    from oqronkit.history.writes import Retention
    from oqronkit.queues.runs import finish_run

    times = []
    for minute in range(args.minutes):
        start = BASE + minute * MINUTE_MS
        page = durable.list("runs", order="started", started_from=start, started_to=start + MINUTE_MS,
                            status="running", limit=1000)
        for record in page.records:
            finish_run(record.value, "completed", at=start + MINUTE_MS * 3)
        durable.put_many(RecordWrite("runs", r.id, r.value) for r in page.records)
        cpu = process_cpu_ms()
        assert settle_minute(durable, start, Retention(), RollupReport()) == 0
        times.append(process_cpu_ms() - cpu)
    return statistics.median(times)


def time_reads(durable, url: str, repeat: int) -> dict[str, tuple[int, float]]:
    """Wall time of reading one queue's history per range, over 35 days of synthetic buckets."""
    from oqronkit.history.backfill import backfill_synthetic
    from oqronkit.history.read import RANGES, metrics_history

    now = int(time.time() * 1000)
    backfill_synthetic(durable, ["queue-0", "queue-1"], days=35, per_minute=200, now=now)
    with psycopg_connect(url) as conn:
        conn.execute("ANALYZE oqron_runs")
    found = {}
    for span in RANGES:
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            history = metrics_history(durable, "queue", "queue-0", span, now=now)
            times.append((time.perf_counter() - started) * 1000)
        found[span] = (len(history.points), statistics.median(times))
    return found


def make_run(n: int, started: int) -> dict:
    from oqronkit.queues.runs import add_log, finish_run, new_run

    topic = n % 8 == 0
    extra = {"waitMs": 5 + n % 200, **({"topic": "orders", "group": f"g{n % 3}"} if topic else {})}
    run = new_run(name=f"queue-{n % 40}", module="topic" if topic else "queue", trigger="queue",
                  input={"user": n, "email": f"user{n}@example.com"}, attempts=2 if n % 10 == 0 else 1, app="bench",
                  environment="production", worker_id=f"worker-{n % 4}", job_id=f"job-{started}-{n}",
                  started_at=started, extra=extra)
    add_log(run, "info", "sending", limit=200)
    add_log(run, "info", "sent", limit=200)
    if n % 100 != 7:  # one run in 100 still running when its minute is rolled
        finish_run(run, "failed" if n % 20 == 0 else "completed", output={"ok": True, "id": n},
                   at=started + 20 + n % 500)
    return dict(run)


def psycopg_connect(url: str):
    import psycopg

    return psycopg.connect(url, autocommit=True)


def process_cpu_ms() -> float:
    return time.process_time() * 1000


def database_cpu_ms(url: str) -> float | None:
    """User+system CPU of every backend connected to the bench database (this machine only)."""
    tick = os.sysconf("SC_CLK_TCK")
    try:
        with psycopg_connect(url) as conn:
            pids = [row[0] for row in conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")]
        total = 0
        for pid in pids:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
    except (OSError, IndexError, ValueError):
        return None
    return total * 1000 / tick


if __name__ == "__main__":
    sys.exit(main())
