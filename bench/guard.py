"""The regression guard: this working tree against the merge base on a plain queue, in about 3 minutes.

Run it before committing any change under ``oqronkit/worker/``, ``oqronkit/queues/``
(``add``, ``add_bulk``) or ``oqronkit/backends/``, and quote its table in the commit message.

In each round, per mode (``postgres`` and ``redis-postgres``), the two arms run in a
random order, each in fresh processes and its own database (the revisions' schemas may
differ), on the shared servers:

* processing: ``recording_cost.py``'s phase: ``--jobs`` no-op jobs added in bulk, then
  ``bench/peers/oqron_worker.py`` of that arm's checkout; jobs/s and the worker's CPU
  (``/proc`` utime + stime) per job from the 1,000th completion to the last;
* enqueue: ``add_cost.py``'s producer: ``--singles`` single ``add`` calls and ``--bulk``
  jobs through ``add_bulk``, microseconds per call and per job.

Then, once per arm and mode, ``path_counts.py``: Python calls, Postgres transactions and
Redis commands per job of an in-process worker, counts that do not move with the load.

It prints, per mode and figure, the median of the per-round ratios this/base with the
lowest and highest round, and a flag on a median more than ``--tolerance`` worse.
Read the CPU per job first: it moves least with the machine's load; a rate ratio
whose spread straddles 1 says nothing. ``--against REV`` (a revision or a checkout's
directory) compares with something other than the merge base.

    .venv/bin/python bench/guard.py                # against git merge-base HEAD main
    .venv/bin/python bench/guard.py --against 3ef4fdc --rounds 7
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import redis
from add_cost import one as enqueue_round  # this folder: the scripts' own
from checkouts import describe, merge_base, other_checkout, scratch_database
from recording_cost import phase as process_round

ROOT = Path(__file__).resolve().parent.parent
PG_URL = os.environ.get("BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
#: (figure, key in a round's result, True when higher is better)
FIGURES = (("processing jobs/s", "rate", True), ("worker CPU us/job", "worker", False),
           ("add us/call", "single_us", False), ("add_bulk us/job", "bulk_us_per_job", False))


def measure(args: argparse.Namespace, arms: dict[str, Path], urls: dict[str, str]
            ) -> dict[tuple[str, str], list[dict[str, float]]]:
    """Every round's figures per (mode, arm)."""
    rds = redis.Redis.from_url(args.redis_url)
    rng = random.Random(args.seed)
    scratch = Path(tempfile.mkdtemp(prefix="oqron-guard-"))
    found: dict[tuple[str, str], list[dict[str, float]]] = {}
    for n in range(args.rounds):
        for mode in args.modes:
            args.mode = mode
            order = list(arms)
            rng.shuffle(order)
            for arm in order:
                tag = f"guard-{os.getpid()}-{n}-{mode}-{arm}"
                got = process_round(args, urls[arm], rds, tag, True, arms[arm])
                got.update(enqueue_round(arms[arm], mode, args, scratch, pg_url=urls[arm]))
                found.setdefault((mode, arm), []).append(got)
        print(f"round {n + 1}/{args.rounds} done, load {os.getloadavg()[0]:.1f}", flush=True)
    return found


COUNTS = (("python calls/job", "python_calls"), ("builtin calls/job", "builtin_calls"),
          ("pg transactions/job", "pg_transactions"), ("redis sends/job", "redis_sends"))


def path_counts(args: argparse.Namespace, arms: dict[str, Path], urls: dict[str, str]) -> dict[tuple[str, str], Any]:
    """path_counts.py once per (mode, arm), with that arm's oqronkit."""
    found = {}
    for mode in args.modes:
        for arm, root in arms.items():
            env = {k: v for k, v in os.environ.items() if not k.startswith(("OQRON_", "PYTHON"))}
            env["PYTHONPATH"] = str(root)
            out = subprocess.run([sys.executable, str(ROOT / "bench" / "path_counts.py"), mode, urls[arm],
                                  "--redis-url", args.redis_url], env=env, capture_output=True, text=True,
                                 timeout=600)
            if out.returncode != 0:
                raise SystemExit(f"path_counts.py {mode} ({arm}) failed:\n{out.stderr[-3000:]}")
            found[(mode, arm)] = json.loads(out.stdout.strip().splitlines()[-1])
    return found


def report_counts(args: argparse.Namespace, counts: dict[tuple[str, str], Any]) -> None:
    print("\ncounted per job (path_counts.py, an in-process worker, one run per arm; below 1 is cheaper)")
    print(f"{'mode':15} {'figure':20} {'base':>9} {'this':>9} {'this/base':>10}")
    for mode in args.modes:
        base, this = counts[(mode, "base")], counts[(mode, "this")]
        for name, key in COUNTS:
            ratio = f"{this[key] / base[key]:10.3f}" if base[key] else f"{'-':>10}"
            print(f"{mode:15} {name:20} {base[key]:9.3f} {this[key]:9.3f} {ratio}")


def report(args: argparse.Namespace, found: dict[tuple[str, str], list[dict[str, float]]], label: str) -> bool:
    """The table; True when a median is worse than --tolerance and no round was better."""
    print(f"\nthis working tree against {label}: {args.rounds} interleaved rounds, {args.jobs} jobs per "
          f"processing phase; this/base per round, median [lowest, highest]")
    print(f"{'mode':15} {'figure':20} {'base':>9} {'this':>9} {'this/base':>10} {'spread':>15}  note")
    worse = False
    for mode in args.modes:
        base, this = found[(mode, "base")], found[(mode, "this")]
        for name, key, higher in FIGURES:
            ratios = [t[key] / b[key] for b, t in zip(base, this, strict=True)]
            med = statistics.median(ratios)
            score = [r if higher else 1 / r for r in ratios]  # above 1: this checkout is better
            bad = statistics.median(score) < 1 - args.tolerance
            worse |= bad and max(score) < 1
            note = ("WORSE" if max(score) < 1 else "worse? (the spread straddles 1)") if bad else ""
            print(f"{mode:15} {name:20} {statistics.median(r[key] for r in base):9.1f} "
                  f"{statistics.median(r[key] for r in this):9.1f} {med:10.3f} "
                  f"[{min(ratios):.3f}, {max(ratios):.3f}]  {note}")
    print("jobs/s: above 1 is faster; the other figures: below 1 is cheaper. WORSE: the median is more than "
          f"{args.tolerance:.0%} worse and no round was better (with a round better: rerun with more --rounds)")
    return worse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", default=None, help="a revision or a checkout's directory "
                                                        "(default: git merge-base HEAD main)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--jobs", type=int, default=8000, help="jobs per processing phase (the first 1,000 "
                                                               "are not timed)")
    parser.add_argument("--singles", type=int, default=300, help="single add calls per enqueue phase")
    parser.add_argument("--bulk", type=int, default=3000, help="jobs through add_bulk per enqueue phase")
    parser.add_argument("--modes", default="postgres,redis-postgres")
    parser.add_argument("--tolerance", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--pg-url", default=PG_URL, help="a maintenance database; each arm gets its own next to it")
    parser.add_argument("--redis-url", default=REDIS_URL)
    args = parser.parse_args(argv)
    args.modes = args.modes.split(",")
    args.worker_log_level, args.same_session = "warning", False  # recording_cost's phase reads them
    against = args.against or merge_base()
    label = describe(against) + ("" if args.against else " (the merge base with main)")
    started = time.monotonic()
    run = uuid.uuid4().hex[:6]
    with other_checkout(against) as base, scratch_database(args.pg_url, f"oqron_guard_{run}_base") as base_url, \
            scratch_database(args.pg_url, f"oqron_guard_{run}_this") as this_url:
        arms, urls = {"base": base, "this": ROOT}, {"base": base_url, "this": this_url}
        found = measure(args, arms, urls) if args.rounds else {}
        counts = path_counts(args, arms, urls)
    worse = report(args, found, label) if found else False
    report_counts(args, counts)
    print(f"took {time.monotonic() - started:.0f} s")
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
