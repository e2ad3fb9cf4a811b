"""Pub/sub topics: publish rates and end-to-end delivery against Redis Streams used
directly (a floor, not a peer), and against the engine's own queues in the same run.

Our engine runs in each ``--modes`` mode (``postgres``, ``redis-postgres``, ``redis``); the
floor, ``redis-streams``, is the same Redis server with no engine: pipelined ``XADD`` and
``XREADGROUP`` + ``XACK`` consumer threads. Phases, each from clean state (a fresh
project / key prefix, emptied tables and a ``CHECKPOINT``), interleaved and repeated
``--repeat`` times with the systems shuffled within each block; the tables show medians:

1. ``publish_many``: N messages (``{"i": i, "to": "user-i@example.com"}``) in chunks of
   ``--chunk``, against the same payloads as pipelined ``XADD`` in the same chunks;
2. ``publish``: one call per message (``--single-n``), against one ``XADD`` per message;
3. ``deliver``: N messages published beforehand, then ONE worker process
   (``python -m oqronkit worker``, run recording on) with two consumer groups of
   ``--concurrency`` each: 2N deliveries, timed by the task body's Redis counter from
   the first completion to the last (and from the worker's spawn). The floor: one
   process with ``--concurrency`` ``XREADGROUP``/``XACK`` threads per group;
4. ``queue``: the same worker setup on two plain queues of N ``add_bulk`` jobs each
   (2N jobs, same handler and concurrency): the reference of the delivery target;
   ``queue1`` is one queue of N jobs (``bench/throughput.py``'s processing figure);
5. ``latency``: ``--latency-n`` messages ``--latency-gap`` apart into idle consumers;
   each delivery records ``start - publish time`` (2 per message, one per group).

Every task body is ``bench/peers/common.py``'s ``INCR``. Checks: the counter ends at
exactly 2N (N for ``queue1``), every delivery left one completed run in its group's
queue, no job or dead letter is left, each group's lag is 0.

``--against DIR`` adds another checkout's engine (``against-oqron-<mode>``, a before) to
every block, so a change is measured against its before within the same repetitions.

Targets: ``publish_many`` >= 0.5x pipelined ``XADD``; deliveries/s (both groups
together, a run each) >= 0.5x the ``queue`` phase's jobs/s, per mode. A ratio is the
median of the per-repetition ratios (its two sides ran in the same block of the same
repetition, so a slow spell of the shared machine hits both); the ratio of the medians
is printed next to it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from throughput import (
    Bench,
    BenchError,
    Worker,
    check_servers,
    engine_revision,
    percentile,
    run_checked,
    wait_for_count,
    wait_for_key,
    with_database,
)

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT / "bench" / "peers"
PYTHON = sys.executable
MODES = ("postgres", "redis-postgres", "redis")
FLOOR = "redis-streams"
PHASES = ("publish_many", "publish", "deliver", "queue", "queue1", "latency")
# Phases compared with each other run in one block, their systems shuffled together.
BLOCKS = (("publish_many",), ("publish",), ("deliver", "queue", "queue1"), ("latency",))
TOPIC_QUEUES = "bench-events@a,bench-events@b"  # pubsub_app's delivery queues
REFERENCE_QUEUES = "bench-ref-a,bench-ref-b"
GROUPS = "a,b"
Results = dict[str, dict[str, list[dict[str, Any]]]]  # system -> phase -> one dict per run


@dataclass
class Phase:
    tag: str
    env: dict[str, str]
    stream: str
    project: str | None = None
    peers: Path = PEERS  # the checkout whose driver and app the phase runs


class System:
    """Our engine in one mode, or the Redis Streams floor (``mode`` None)."""

    def __init__(self, mode: str | None, root: Path = ROOT) -> None:
        self.mode = mode
        self.root = root  # --against: another checkout's engine, measured in the same blocks
        self.name = (f"oqron-{mode}" if root == ROOT else f"against-oqron-{mode}") if mode else FLOOR
        self.database: str | None = None

    @property
    def phases(self) -> tuple[str, ...]:
        return PHASES if self.mode else ("publish_many", "publish", "deliver", "latency")

    def prepare(self, bench: Bench) -> None:
        if self.mode in ("postgres", "redis-postgres"):
            self.database = bench.database("pubsub")

    def fresh(self, bench: Bench, phase_name: str) -> Phase:
        tag = bench.next_tag(self.name, phase_name)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OQRON_", "DJANGO_", "PYTHON"))}
        env.update({"BENCH_REDIS_URL": bench.redis_url, "BENCH_KEY": f"oqbench:{tag}",
                    "BENCH_PARTITIONS": str(bench.args.partitions), "BENCH_CONCURRENCY": str(bench.args.concurrency),
                    "BENCH_ANALYZE": "1" if bench.args.analyze else "0",
                    "PYTHONPATH": f"{self.root / 'bench' / 'peers'}{os.pathsep}{self.root}", "PYTHONUNBUFFERED": "1"})
        phase = Phase(tag, env, stream=f"oqbench:{tag}:stream", peers=self.root / "bench" / "peers")
        if self.mode:
            phase.project = f"ps-{tag}"
            env.update({"OQRON_MODE": self.mode, "OQRON_PROJECT": phase.project, "OQRON_ENVIRONMENT": "bench",
                        # A private lock directory: our one worker always gets the first CPU
                        # (other workers on the host no longer decide whether it is pinned).
                        "OQRON_CPU_AFFINITY": bench.args.cpu_affinity,
                        "OQRON_CPU_LOCK_DIR": str(bench.scratch)})
            if self.mode != "postgres":
                env["OQRON_REDIS_URL"] = bench.redis_url
            if self.database:
                bench.truncate(self.database, "oqron_", required=False)  # the engine creates them
                env["OQRON_DATABASE_URL"] = with_database(bench.pg_url, self.database)
        return phase

    def analyze(self, bench: Bench) -> None:
        """Planner statistics after loading the phase's rows, as autovacuum would have by
        then (the reset's TRUNCATE leaves none); ``bench/throughput.py`` does the same."""
        if self.database and bench.args.analyze:
            with bench.pg(self.database) as conn:
                conn.execute("ANALYZE")

    def cleanup(self, bench: Bench, phase: Phase) -> None:
        """Delete every Redis key of the phase: the counter and stream (``oqbench:<tag>:*``)
        and, in our Redis modes, the project's (``oqron:ps-<tag>:*``). Nothing is flushed."""
        r = bench.redis()
        patterns = [f"oqbench:{phase.tag}:*"] + ([f"oqron:{phase.project}:*"] if phase.project else [])
        for pattern in patterns:
            batch: list[bytes] = []
            for key in r.scan_iter(match=pattern, count=1000):
                batch.append(key)
                if len(batch) >= 500:
                    r.unlink(*batch)
                    batch.clear()
            if batch:
                r.unlink(*batch)


def driver(phase: Phase, *args: str, timeout: float) -> dict[str, Any]:
    out = run_checked([PYTHON, str(phase.peers / "pubsub_driver.py"), *args], phase.env, timeout=timeout,
                      what=f"pubsub_driver.py {' '.join(args)}")
    try:
        return json.loads(out.strip().splitlines()[-1])
    except (IndexError, ValueError) as exc:
        raise BenchError(f"pubsub_driver.py {args[0]} printed no result: {out[-500:]!r}") from exc


def worker_argv(bench: Bench, system: System, phase: Phase, queues: str) -> list[str]:
    if system.mode is None:
        return [PYTHON, str(PEERS / "streams_consumer.py"), "--stream", phase.stream, "--groups", GROUPS,
                "--concurrency", str(bench.args.concurrency), "--count", str(bench.args.stream_count)]
    return [PYTHON, "-m", "oqronkit", "worker", "--import", "pubsub_app", "--queues", queues,
            "--log-level", "warning"]


# -- phases ---------------------------------------------------------------------------------


def phase_publish(bench: Bench, system: System, phase: Phase, *, many: bool) -> dict[str, Any]:
    n = bench.args.n if many else bench.args.single_n
    mode = "many" if many else "single"
    if system.mode:
        got = driver(phase, "publish", "--mode", mode, "--n", str(n), "--chunk", str(bench.args.chunk),
                     timeout=60 + n / 20)
    else:
        got = driver(phase, "xadd", "--mode", mode, "--n", str(n), "--chunk", str(bench.args.chunk),
                     "--stream", phase.stream, timeout=60 + n / 20)
    result: dict[str, Any] = {"rate": got["rate"]}
    if got["logged"] != n:
        result["problems"] = [f"{got['logged']} messages in the log after publishing {n}"]
    return result


def process(bench: Bench, system: System, phase: Phase, queues: str, target: int) -> dict[str, Any]:
    """Start one worker, wait for ``target`` completions; rates and the exit code."""
    from common import keys

    names = keys(phase.env["BENCH_KEY"])
    env = {**phase.env, "BENCH_TARGET": str(target)}
    log = bench.scratch / f"{phase.tag}.log"
    with Worker(worker_argv(bench, system, phase, queues), env, log, stop_timeout=bench.args.stop_timeout) as worker:
        wait_for_count(bench, worker, names["done"], target, stall=bench.args.stall_timeout,
                       limit=120 + target / 5)
        last = wait_for_key(bench, names["last"])
        first = wait_for_key(bench, names["first"])
        code = worker.stop()
    result: dict[str, Any] = {"rate": (target - 1) / (last - first) if last > first else None,
                              "from_spawn": target / (last - worker.spawned_at),
                              "first_after_s": first - worker.spawned_at}
    problems = []
    ran = int(bench.redis().get(names["done"]) or 0)
    if ran != target:
        problems.append(f"{ran} completions for {target} deliveries/jobs (a duplicate or a loss)")
    if code not in (0, -signal.SIGTERM):
        problems.append(f"worker stopped with exit code {code} (None: killed after --stop-timeout); log {log}")
    if problems:
        result["problems"] = problems
    return result


def check_runs(got: dict[str, Any], queues: str, n: int) -> list[str]:
    """Every job / delivery of ``queues`` left one completed run, and nothing is left."""
    problems = []
    for queue in queues.split(","):
        runs, completed, jobs = (got[k].get(queue, 0) for k in ("runs", "completed", "jobs"))
        if not runs == completed == jobs == n:
            problems.append(f"{queue}: {runs} runs ({completed} completed) for {jobs} jobs, want {n} each")
    if got["left"]:
        problems.append(f"{got['left']} jobs or dead letters left")
    for group, lag in (got.get("lag") or {}).items():
        if lag["total"] or lag["inQueue"]:
            problems.append(f"group {group}: lag {lag['total']}, {lag['inQueue']} deliveries still queued")
    return problems


def phase_deliver(bench: Bench, system: System, phase: Phase) -> dict[str, Any]:
    n, chunk = bench.args.n, str(bench.args.chunk)
    if system.mode:
        pre = driver(phase, "prepublish", "--n", str(n), "--chunk", chunk, timeout=60 + n / 20)
    else:
        pre = driver(phase, "prestream", "--n", str(n), "--chunk", chunk, "--stream", phase.stream,
                     "--groups", GROUPS, timeout=60 + n / 20)
    if pre["logged"] != n:
        raise BenchError(f"{pre['logged']} messages published for {n}")
    system.analyze(bench)
    result = process(bench, system, phase, TOPIC_QUEUES, 2 * n)
    if system.mode and bench.args.verify:
        got = driver(phase, "verify", "--topic", timeout=300)
        result.setdefault("problems", []).extend(check_runs(got, TOPIC_QUEUES, n))
    return result


def phase_queue(bench: Bench, system: System, phase: Phase, queues: str) -> dict[str, Any]:
    n = bench.args.n
    count = len(queues.split(","))
    enq = driver(phase, "enqueue", "--n", str(n), "--chunk", str(bench.args.chunk), "--queues", queues,
                 timeout=60 + n * count / 20)
    system.analyze(bench)
    result = process(bench, system, phase, queues, n * count)
    result["add_bulk"] = enq["rate"]
    if bench.args.verify:
        result.setdefault("problems", []).extend(check_runs(driver(phase, "verify", timeout=300), queues, n))
    return result


def phase_latency(bench: Bench, system: System, phase: Phase) -> dict[str, Any]:
    from common import keys

    n = bench.args.latency_n
    names = keys(phase.env["BENCH_KEY"])
    groups = len(GROUPS.split(","))
    target = groups * (n + 1)
    env = {**phase.env, "BENCH_TARGET": str(target)}
    log = bench.scratch / f"{phase.tag}.log"
    args = ["latency", "--target", "topic" if system.mode else "stream", "--n", str(n),
            "--gap", str(bench.args.latency_gap), "--stream", phase.stream, "--groups", GROUPS]
    if system.mode is None:
        for group in GROUPS.split(","):
            bench.redis().xgroup_create(phase.stream, group, id="0", mkstream=True)
    with Worker(worker_argv(bench, system, phase, TOPIC_QUEUES), env, log,
                stop_timeout=bench.args.stop_timeout) as worker:
        driver(phase, *args, timeout=120 + n * bench.args.latency_gap * 3)
        wait_for_count(bench, worker, names["done"], target, stall=bench.args.stall_timeout, limit=120)
    values = [float(v) * 1000 for v in bench.redis().lrange(names["latency"], 0, -1)]
    if len(values) != groups * n:
        raise BenchError(f"{len(values)} latency samples, expected {groups * n}")
    return {"p50": percentile(values, 50), "p99": percentile(values, 99), "max": max(values)}


def run_phase(bench: Bench, system: System, name: str) -> dict[str, Any]:
    """One phase of one system from clean state; a failure is recorded, not raised."""
    load = os.getloadavg()[0]
    phase = system.fresh(bench, name)
    began = time.monotonic()
    try:
        if name in ("publish_many", "publish"):
            result = phase_publish(bench, system, phase, many=name == "publish_many")
        elif name == "deliver":
            result = phase_deliver(bench, system, phase)
        elif name == "queue":
            result = phase_queue(bench, system, phase, REFERENCE_QUEUES)
        elif name == "queue1":
            result = phase_queue(bench, system, phase, REFERENCE_QUEUES.split(",")[0])
        else:
            result = phase_latency(bench, system, phase)
    except BenchError as exc:
        result = {"problems": [f"failed: {exc}"]}
    finally:
        system.cleanup(bench, phase)
    result["load"] = load
    result["seconds"] = time.monotonic() - began
    if not result.get("problems"):
        result.pop("problems", None)
    return result


def measure(bench: Bench, systems: list[System], phases: list[str]) -> Results:
    """Every (system, phase) ``--repeat`` times: block by block, systems shuffled in a block."""
    results: Results = {s.name: {} for s in systems}
    rng = random.Random(bench.args.seed)
    for rep in range(bench.args.repeat):
        for block in BLOCKS:
            cells = [(s, p) for p in block if p in phases for s in systems if p in s.phases]
            rng.shuffle(cells)
            for system, name in cells:
                result = run_phase(bench, system, name)
                results[system.name].setdefault(name, []).append(result)
                shown = {k: (round(v, 2) if isinstance(v, float) else v) for k, v in result.items()}
                print(f"run {rep + 1}/{bench.args.repeat} {system.name} {name}: {json.dumps(shown)}", flush=True)
    return results


# -- report -------------------------------------------------------------------------------


def med(results: Results, system: str, phase: str, key: str = "rate") -> float | None:
    values = [r[key] for r in results.get(system, {}).get(phase, []) if r.get(key) is not None]
    return statistics.median(values) if values else None


def fmt(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def times(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def paired(results: Results, a: tuple[str, str], b: tuple[str, str]) -> list[float]:
    """The ratio a/b within each repetition (both measured in it)."""
    xs = [r.get("rate") for r in results.get(a[0], {}).get(a[1], [])]
    ys = [r.get("rate") for r in results.get(b[0], {}).get(b[1], [])]
    return [x / y for x, y in zip(xs, ys, strict=False) if x and y]


def print_report(systems: list[System], results: Results, args: argparse.Namespace) -> list[dict[str, Any]]:
    print(f"\nMedians of {args.repeat} (N {args.n:,} messages, 2 groups x concurrency {args.concurrency}, "
          f"{args.partitions} partition(s); single publish {args.single_n:,}; chunks of {args.chunk:,}):\n")
    print("| system | publish_many msg/s | publish msg/s | deliveries/s | from spawn/s | queue jobs/s (2 queues) "
          "| queue jobs/s (1 queue) | latency p50 ms | p99 ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for s in systems:
        cells = [fmt(med(results, s.name, "publish_many")), fmt(med(results, s.name, "publish")),
                 fmt(med(results, s.name, "deliver")), fmt(med(results, s.name, "deliver", "from_spawn")),
                 fmt(med(results, s.name, "queue")), fmt(med(results, s.name, "queue1")),
                 fmt(med(results, s.name, "latency", "p50"), 1), fmt(med(results, s.name, "latency", "p99"), 1)]
        print(f"| {s.name} | " + " | ".join(cells) + " |")
    print("\nEvery run (rate; load average before the phase):")
    for s in systems:
        for phase in s.phases:
            runs = results[s.name].get(phase, [])
            if runs:
                key = "p50" if phase == "latency" else "rate"
                shown = ", ".join(f"{fmt(r.get(key), 1 if phase == 'latency' else 0)} ({r['load']:.1f})" for r in runs)
                print(f"  {s.name:22} {phase:13} {shown}")
    rows: list[tuple[str, float | None, dict[str, Any]]] = []  # (what, bound or None for info, figures)
    for s in systems:
        if not s.mode:
            continue
        rows += [
            (f"{s.name}: publish_many >= 0.5x pipelined XADD", 0.5,
             compare(results, (s.name, "publish_many"), (FLOOR, "publish_many"))),
            (f"{s.name}: deliveries/s >= 0.5x queue jobs/s (same worker, 2 queues)", 0.5,
             compare(results, (s.name, "deliver"), (s.name, "queue"))),
            (f"{s.name}: deliveries/s vs one queue's jobs/s", None,
             compare(results, (s.name, "deliver"), (s.name, "queue1"))),
            (f"{s.name}: single publish vs single XADD", None,
             compare(results, (s.name, "publish"), (FLOOR, "publish"))),
            (f"{s.name}: deliveries/s vs XREADGROUP+XACK", None,
             compare(results, (s.name, "deliver"), (FLOOR, "deliver"))),
        ]
    width = max([len(name) for name, _, _ in rows] + [40])
    print("\nTargets and ratios: the median of the per-repetition ratios (both sides measured in the same "
          "block of the same repetition), which decides; the ratio of the medians; each repetition's ratio.")
    for title, wanted in (("Targets", True), ("Information", False)):
        print(f"{title}:")
        for name, bound, got in rows:
            if (bound is not None) != wanted:
                continue
            value = got["paired_median"]
            verdict = "info" if bound is None else ("n/a " if value is None else ("PASS" if value >= bound else "FAIL"))
            each = ", ".join(f"{v:.2f}" for v in got["paired"])
            print(f"  {verdict}  {name:{width}} {times(value):>6}  (of medians {times(got['of_medians'])}; "
                  f"each {each or '-'})")
    return [{"what": name, "bound": bound, **got} for name, bound, got in rows]


def compare(results: Results, a: tuple[str, str], b: tuple[str, str]) -> dict[str, Any]:
    pairs = paired(results, a, b)
    return {"paired_median": statistics.median(pairs) if pairs else None, "paired": pairs,
            "of_medians": ratio(med(results, *a), med(results, *b))}


def print_problems(results: Results) -> bool:
    found = False
    for system, phases in results.items():
        for phase, runs in phases.items():
            for i, run in enumerate(runs, 1):
                for problem in run.get("problems", []):
                    print(f"  PROBLEM {system} {phase} run {i}: {problem}")
                    found = True
    return found


# -- main ------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modes", default="postgres,redis-postgres",
                        help=f"our engine's modes, comma-separated, out of {', '.join(MODES)}")
    parser.add_argument("--phases", default=",".join(PHASES), help=f"comma-separated, out of {', '.join(PHASES)}")
    parser.add_argument("--n", type=int, default=20_000, help="messages for publish_many and deliver (and jobs "
                                                              "per queue in the queue phases)")
    parser.add_argument("--single-n", type=int, default=2_000, help="messages for single publish")
    parser.add_argument("--chunk", type=int, default=1_000, help="messages per publish_many / pipeline / add_bulk")
    parser.add_argument("--partitions", type=int, default=1, help="the topic's partitions")
    parser.add_argument("--concurrency", type=int, default=5,
                        help="each group's (and reference queue's) concurrency; the floor's threads per group")
    parser.add_argument("--stream-count", type=int, default=50, help="the floor's COUNT per XREADGROUP")
    parser.add_argument("--latency-n", type=int, default=100)
    parser.add_argument("--latency-gap", type=float, default=0.02, help="seconds between latency messages")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved runs of every phase; medians reported")
    parser.add_argument("--seed", type=int, default=0, help="seed of the shuffled order")
    parser.add_argument("--quick", action="store_true", help="smoke run: N 2000, single 300, latency 30, repeat 1")
    parser.add_argument("--cpu-affinity", choices=("auto", "off"), default="auto",
                        help="our worker's pinning (auto: pinned to the first CPU, through a lock directory of "
                             "this run's own)")
    parser.add_argument("--no-verify", dest="verify", action="store_false",
                        help="skip reading back the run records after the delivery and queue phases")
    parser.add_argument("--no-analyze", dest="analyze", action="store_false",
                        help="no ANALYZE anywhere: not between loading and processing, not after the publish "
                             "phases' warm-up (on a never-analyzed database the append's duplicate check walks "
                             "the log: see bench/README.md)")
    parser.add_argument("--pg-url", default=os.environ.get("BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres"),
                        help="a maintenance database URL; the bench creates oqron_bench_<run>_pubsub next to it")
    parser.add_argument("--redis-url", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0"))
    parser.add_argument("--stall-timeout", type=float, default=60.0,
                        help="fail a phase after this many seconds without progress")
    parser.add_argument("--stop-timeout", type=float, default=30.0, help="SIGTERM grace before SIGKILL")
    parser.add_argument("--lock-timeout", type=float, default=3600.0,
                        help="how long to wait for another bench run on the same server (throughput.py's lock)")
    parser.add_argument("--json", type=Path, default=None, help="also write every run's figures here")
    parser.add_argument("--against", type=Path, default=None,
                        help="another checkout (a before): its engine runs as against-oqron-<mode> in the same "
                             "blocks, so before and after share every slow spell of the machine")
    parser.add_argument("--keep-logs", action="store_true", help="keep worker logs")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.single_n, args.latency_n, args.repeat = 2_000, 300, 30, 1
    args.mode_list = [m.strip() for m in args.modes.split(",") if m.strip()]
    args.phase_list = [p.strip() for p in args.phases.split(",") if p.strip()]
    for mode in args.mode_list:
        if mode not in MODES:
            parser.error(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
    for phase in args.phase_list:
        if phase not in PHASES:
            parser.error(f"unknown phase {phase!r}; choose from {', '.join(PHASES)}")
    if not 1 <= args.partitions <= 256 or args.concurrency < 1 or args.n < 2 or args.chunk < 1:
        parser.error("--partitions 1..256, --concurrency >= 1, --n >= 2, --chunk >= 1")
    return args


def run(args: argparse.Namespace) -> int:
    scratch = Path(tempfile.mkdtemp(prefix="oqron-pubsub-"))
    bench = Bench(args.pg_url, args.redis_url, args, scratch)
    systems = [System(m) for m in args.mode_list] + [System(None)]
    if args.against is not None:
        systems[-1:-1] = [System(m, args.against.resolve()) for m in args.mode_list]
    failed = True
    try:
        check_servers(bench)
        bench.take_lock(args.lock_timeout)
        for system in systems:
            system.prepare(bench)
        args.engine_revision = engine_revision()
        print(f"engine: {args.engine_revision}; Python {sys.version.split()[0]}; {os.cpu_count()} CPUs", flush=True)
        results = measure(bench, systems, args.phase_list)
        targets = print_report(systems, results, args)
        failed = print_problems(results)
        if args.json is not None:
            args.json.write_text(json.dumps({
                "args": {k: v for k, v in vars(args).items() if k != "json"}, "runs": results, "ratios": targets},
                indent=1, default=str))
        return 1 if failed else 0
    finally:
        with contextlib.suppress(Exception):
            bench.drop_databases()
        bench.release_lock()
        if args.keep_logs or failed:
            print(f"\nworker logs: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sys.path.insert(0, str(PEERS))  # common.py: the Redis key names
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        return run(args)
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; workers stopped", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
