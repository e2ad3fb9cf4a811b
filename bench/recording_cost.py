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

``--env NAME=VALUE`` compares a setting instead: pairs of the worker with that variable
in its environment and without (both with run records), e.g. the cost of module logs::

    .venv/bin/python bench/recording_cost.py --pairs 10 --env OQRON_MODULE_LOGS=all --worker-log-level info

and prints the median of the per-pair differences of the worker's CPU per job.

``--against REV`` (or a checkout's directory) compares two commits instead: pairs of the
worker of the other revision (checked out into a temporary worktree) and this one's, both
with run records (or both without, ``--no-runs``), interleaved the same way.
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
from checkouts import describe, drop_redis_project, other_checkout  # this folder: the scripts' own
from throughput import with_database

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench" / "peers"))
from common import keys  # noqa: E402 - the phase's Redis key names, as the task body writes them

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


def reset(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        names = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE 'oqron\\_%'")]
        names = [n for n in names if n != "oqron_hot_epoch"]  # emptied, it reads as a server crash
        if names:
            conn.execute("TRUNCATE " + ", ".join(f'"{n}"' for n in names))
        conn.execute("CHECKPOINT")


def count_runs(url: str, project: str) -> tuple[int, int, int]:
    """Runs, jobs left, and module log records (``--env OQRON_MODULE_LOGS=...`` shows they were on)."""
    with psycopg.connect(url) as conn:
        runs = conn.execute("SELECT count(*) FROM oqron_runs WHERE project = %s AND record_kind = 'run'",
                            (project,)).fetchone()[0]  # not the metrics history's rows (a deploy marker)
        jobs = conn.execute("SELECT count(*) FROM oqron_jobs WHERE project = %s", (project,)).fetchone()[0]
        logs = conn.execute("SELECT count(*) FROM oqron_records WHERE project = %s AND namespace LIKE %s",
                            (project, "module\\_logs:%")).fetchone()[0]
    return runs, jobs, logs


def phase(args: argparse.Namespace, url: str, rds: redis.Redis, tag: str, record: bool,
          root: Path = ROOT, extra_env: dict[str, str] | None = None) -> dict[str, float]:
    """One timed phase of the worker in checkout ``root``, with or without run records."""
    peers = root / "bench" / "peers"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OQRON_", "PYTHON"))}
    project = f"ab-{tag}"
    env.update({"OQRON_MODE": args.mode, "OQRON_DATABASE_URL": url, "OQRON_REDIS_URL": args.redis_url,
                "OQRON_PROJECT": project,
                "OQRON_ENVIRONMENT": "bench", "BENCH_REDIS_URL": args.redis_url, "BENCH_KEY": f"oqab:{tag}",
                "BENCH_TARGET": str(args.jobs), "PYTHONPATH": f"{peers}{os.pathsep}{root}",
                "PYTHONUNBUFFERED": "1", "BENCH_LOG_LEVEL": args.worker_log_level, **(extra_env or {})})
    reset(url)
    subprocess.run([sys.executable, "-c", ENQUEUE.format(n=args.jobs)], env=env, check=True, timeout=300)
    argv = [sys.executable, str(peers / "oqron_worker.py")] + ([] if record else ["--no-record-runs"])
    # Its own session by default, as throughput.py and a service manager start it: with
    # the kernel's autogroup scheduling on, that makes it its own CPU-share group, and the
    # recording cost about doubled (see bench/README.md).
    # Its output goes to a file, not a pipe: a worker logging a lot would fill a pipe
    # nobody reads during the phase and stall.
    with tempfile.TemporaryFile() as log:
        worker = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT,
                                  start_new_session=not args.same_session)
        names = keys(f"oqab:{tag}")
        try:
            deadline = time.monotonic() + 300
            mark = None
            while time.monotonic() < deadline:
                done = int(rds.get(names["done"]) or 0)
                if mark is None and done >= SKIP:
                    pg = postgres_pids()  # now: the worker's connections are open
                    mark = (time.time(), done, cpu_ticks([worker.pid]), cpu_ticks(pg))
                if done >= args.jobs and rds.exists(names["last"]):
                    break
                if worker.poll() is not None:
                    log.seek(0)
                    raise RuntimeError(f"worker exited: {log.read().decode(errors='replace')[-2000:]}")
                time.sleep(0.005)
            else:
                raise RuntimeError("phase timed out")
            end_cpu = (cpu_ticks([worker.pid]), cpu_ticks(pg))
            last = float(rds.get(names["last"]))
            first = float(rds.get(names["first"]))
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
    runs, left, logs = count_runs(url, project)
    want = args.jobs if record else 0
    if runs != want or left != 0:
        raise RuntimeError(f"{tag}: {runs} runs (want {want}), {left} jobs left")
    rds.delete(*names.values())
    if args.mode != "postgres":
        drop_redis_project(args.redis_url, project)
    return {"rate": jobs / (last - t0), "from_first": (args.jobs - 1) / (last - first),
            "worker": (end_cpu[0] - w0) * tick_us / jobs,
            "postgres": (end_cpu[1] - p0) * tick_us / jobs, "logs": logs}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=12)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--pg-url", default=os.environ.get("BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres"))
    parser.add_argument("--database", default="oqron_recording_cost")
    parser.add_argument("--redis-url", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0"))
    parser.add_argument("--against", default=None,
                        help="another checkout's directory, or a revision (checked out into a temporary worktree): "
                             "pairs of its worker and this one's, both with run records (or both without: "
                             "--no-runs), instead")
    parser.add_argument("--against-database", default=None,
                        help="with --against: the database of the other checkout's worker (default: the same "
                             "as this one's); give one when the two checkouts' schemas differ, as each worker "
                             "creates its own tables and indexes")
    parser.add_argument("--mode", choices=("postgres", "redis-postgres"), default="postgres",
                        help="the worker's mode (redis-postgres: the hot plane on --redis-url)")
    parser.add_argument("--env", default=None, metavar="NAME=VALUE",
                        help="pairs of the worker with this variable in its environment and without instead")
    parser.add_argument("--worker-log-level", default="warning", choices=("debug", "info", "warning", "error"),
                        help="the worker's log level, both arms (info: the CLI worker's default)")
    parser.add_argument("--no-runs", dest="runs", action="store_false", help="with --against: both arms without runs")
    parser.add_argument("--same-session", action="store_true",
                        help="start the worker in this script's session (by default it gets its own)")
    args = parser.parse_args()
    with psycopg.connect(args.pg_url, autocommit=True) as conn:
        for name in {args.database, args.against_database or args.database}:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
                conn.execute(f'CREATE DATABASE "{name}"')
    url = with_database(args.pg_url, args.database)
    rds = redis.Redis.from_url(args.redis_url)
    if args.against is not None:
        with other_checkout(args.against) as base:
            return compare_checkouts(args, base, url, rds)
    if args.env is not None:
        return compare_env(args, url, rds)
    rows: list[tuple[dict[str, float], dict[str, float]]] = []
    print(f"{'pair':>4} {'with/s':>8} {'without/s':>9} {'cost':>7} {'(first)':>9} "
          f"{'worker us (w/wo)':>17} {'pg us (w/wo)':>13}")
    for i in range(args.pairs):
        arms = [True, False]
        random.shuffle(arms)
        got = {arm: phase(args, url, rds, f"{os.getpid()}-{i}-{int(arm)}", arm) for arm in arms}
        rec, norec = got[True], got[False]
        rows.append((rec, norec))
        cost = 1 - rec["rate"] / norec["rate"]
        early = 1 - rec["from_first"] / norec["from_first"]
        print(f"{i + 1:>4} {rec['rate']:>8,.0f} {norec['rate']:>9,.0f} {cost * 100:>6.1f}% ({early * 100:>5.1f}%) "
              f"{rec['worker']:>8.0f}/{norec['worker']:<8.0f} {rec['postgres']:>6.0f}/{norec['postgres']:<6.0f}",
              flush=True)
    costs = [1 - r["rate"] / n["rate"] for r, n in rows]
    from_first = [1 - r["from_first"] / n["from_first"] for r, n in rows]
    med = statistics.median

    def col(arm: int, key: str) -> float:
        return med([pair[arm][key] for pair in rows])

    print(f"\nmedians of {len(rows)} pairs, {args.jobs} jobs each:")
    print(f"  with runs {col(0, 'rate'):,.0f} jobs/s, without {col(1, 'rate'):,.0f} jobs/s")
    print(f"  recording cost {med(costs) * 100:.1f}% (pairs from {min(costs) * 100:.1f} to {max(costs) * 100:.1f}%)")
    print(f"  timed from the first completion instead (throughput.py's 'excl start-up'): "
          f"{col(0, 'from_first'):,.0f} vs {col(1, 'from_first'):,.0f} jobs/s, cost {med(from_first) * 100:.1f}%")
    print(f"  worker CPU {col(0, 'worker'):.0f} vs {col(1, 'worker'):.0f} us/job, "
          f"postgres CPU {col(0, 'postgres'):.0f} vs {col(1, 'postgres'):.0f} us/job")
    return 0


def compare_env(args: argparse.Namespace, url: str, rds: redis.Redis) -> int:
    """Pairs of (with ``--env``, without), in a random order within each pair: what the
    setting costs the worker, as the median of the per-pair differences."""
    name, _, value = args.env.partition("=")
    rows: list[tuple[dict[str, float], dict[str, float]]] = []
    print(f"{'pair':>4} {'with/s':>8} {'without/s':>9} {'worker us (w/wo)':>17} {'diff us':>8} {'pg us (w/wo)':>13} "
          f"{'logs (w/wo)':>12}")
    for i in range(args.pairs):
        got = {arm: phase(args, url, rds, f"{os.getpid()}-{i}-{int(arm)}", args.runs,
                          extra_env={name: value} if arm else {})
               for arm in random.sample([True, False], 2)}
        on, off = got[True], got[False]
        rows.append((on, off))
        print(f"{i + 1:>4} {on['rate']:>8,.0f} {off['rate']:>9,.0f} {on['worker']:>8.0f}/{off['worker']:<8.0f} "
              f"{on['worker'] - off['worker']:>8.1f} {on['postgres']:>6.0f}/{off['postgres']:<6.0f} "
              f"{on['logs']:>5.0f}/{off['logs']:<5.0f}", flush=True)
    med = statistics.median
    diffs = [on["worker"] - off["worker"] for on, off in rows]
    shares = [(on["worker"] - off["worker"]) / off["worker"] for on, off in rows]
    rates = [1 - on["rate"] / off["rate"] for on, off in rows]
    print(f"\nmedians of {len(rows)} pairs, {args.jobs} jobs each, {args.env} vs unset:")
    print(f"  worker CPU {med([on['worker'] for on, _ in rows]):.1f} vs {med([off['worker'] for _, off in rows]):.1f} "
          f"us/job; per-pair difference {med(diffs):+.1f} us/job = {med(shares) * 100:+.2f}% of the job's CPU "
          f"(pairs from {min(shares) * 100:+.1f} to {max(shares) * 100:+.1f}%)")
    print(f"  jobs/s {med([on['rate'] for on, _ in rows]):,.0f} vs {med([off['rate'] for _, off in rows]):,.0f}, "
          f"per-pair cost {med(rates) * 100:+.2f}% (pairs from {min(rates) * 100:+.1f} to {max(rates) * 100:+.1f}%)")
    print(f"  postgres CPU {med([on['postgres'] for on, _ in rows]):.0f} vs "
          f"{med([off['postgres'] for _, off in rows]):.0f} us/job")
    return 0


def compare_checkouts(args: argparse.Namespace, base: Path, url: str, rds: redis.Redis) -> int:
    """Pairs of (the --against checkout, this one), the same arm, in a random order within
    each pair: on a VM whose speed drifts by 10% within the hour, comparing two commits
    measured at different times says little."""
    here = ROOT
    base_url = with_database(args.pg_url, args.against_database) if args.against_database else url
    if not (base / "bench" / "peers" / "oqron_worker.py").is_file():
        raise SystemExit(f"--against {base}: not a checkout of this repository (no bench/peers/oqron_worker.py)")
    rows: list[tuple[dict[str, float], dict[str, float]]] = []
    print(f"{'pair':>4} {'against/s':>10} {'this/s':>8} {'ratio':>6} {'worker us':>10} {'pg us':>9}")
    for i in range(args.pairs):
        got: dict[Path, dict[str, float]] = {}
        for root in random.sample([base, here], 2):
            which = "base" if root == base else "here"
            got[root] = phase(args, base_url if root == base else url, rds, f"{os.getpid()}-{i}-{which}",
                              args.runs, root)
        a, b = got[base], got[here]
        rows.append((a, b))
        print(f"{i + 1:>4} {a['rate']:>10,.0f} {b['rate']:>8,.0f} {b['rate'] / a['rate']:>6.3f} "
              f"{a['worker']:>4.0f}/{b['worker']:<5.0f} {a['postgres']:>4.0f}/{b['postgres']:<4.0f}", flush=True)
    med = statistics.median
    ratios = [b["rate"] / a["rate"] for a, b in rows]
    print(f"\nmedians of {len(rows)} pairs, {args.jobs} jobs each, {'with' if args.runs else 'without'} runs:")
    print(f"  {describe(args.against)}: {med([a['rate'] for a, _ in rows]):,.0f} jobs/s, this checkout: "
          f"{med([b['rate'] for _, b in rows]):,.0f} jobs/s, ratio {med(ratios):.3f} "
          f"(pairs from {min(ratios):.3f} to {max(ratios):.3f})")
    print(f"  worker CPU {med([a['worker'] for a, _ in rows]):.0f} vs {med([b['worker'] for _, b in rows]):.0f} "
          f"us/job, postgres CPU {med([a['postgres'] for a, _ in rows]):.0f} vs "
          f"{med([b['postgres'] for _, b in rows]):.0f} us/job")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
