"""Webhook deliveries/s to a fast local endpoint with 20 in flight: ours (a delivery job per
event and a run per attempt, signed, through the breaker) against a plain httpx client
loop with the same concurrency and no bookkeeping (a floor, not a peer).

The endpoint is ``bench/peers/webhook_receiver.py`` (asyncio, HTTP/1.1 keep-alive, 200 to
every request) on 127.0.0.1, in its own process for the whole run. Systems, each from a
fresh scope (a new project: its own rows and Redis keys), interleaved and repeated
``--repeat`` times with their order shuffled in each repetition:

- ``floor``: ``bench/peers/httpx_floor.py``: one process, one pooled ``httpx.Client``,
  ``--concurrency`` threads POSTing N webhook-sized JSON bodies; timed from the first
  request to the last answer.
- ``postgres`` / ``redis-postgres`` (``--modes``): N events fired beforehand
  (``webhook.fire``, one matching endpoint: N delivery jobs), then ONE worker process
  (``python -m oqronkit worker``, the webhook's concurrency ``--concurrency``); timed from
  the first attempt's start to the last one's end, read from the N run records. Checks:
  N completed runs with status 200, no job or dead letter left.

The ratio is the median of the per-repetition ratios ours/floor (the two ran in the same
repetition); the ratio of the medians is printed next to it. Target: >= 0.5x the floor.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT / "bench" / "peers"
MODES = ("postgres", "redis-postgres")
FLOOR = "floor"


class BenchError(RuntimeError):
    pass


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(PEERS)]), **(extra or {})}


def start_receiver() -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen([sys.executable, str(PEERS / "webhook_receiver.py")], stdout=subprocess.PIPE, text=True,
                            env=child_env())
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.isdigit():
        proc.kill()
        raise BenchError(f"the receiver did not start: {line!r}")
    return proc, int(line)


def run_floor(args: argparse.Namespace, url: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, str(PEERS / "httpx_floor.py"), url, str(args.n), str(args.concurrency)],
                          capture_output=True, text=True, env=child_env(), timeout=args.stall_timeout * 10)
    if done.returncode != 0:
        raise BenchError(f"the floor failed: {done.stderr[-2000:]}")
    got = json.loads(done.stdout.strip().splitlines()[-1])
    if got["failures"]:
        raise BenchError(f"the floor got {got['failures']} non-200 answers")
    return {"rate": args.n / got["seconds"], "seconds": got["seconds"]}


def schema_url(pg_url: str, schema: str) -> str:
    sep = "&" if "?" in pg_url else "?"
    return f"{pg_url}{sep}options=-csearch_path%3D{schema}"


def run_ours(args: argparse.Namespace, mode: str, url: str, database_url: str) -> dict[str, Any]:
    from webhook_app import OPTIONS

    from oqronkit import Engine, OqronConfig, Registry

    project = f"bench-wh-{uuid.uuid4().hex[:8]}"
    config = OqronConfig(mode=mode, database_url=database_url, project=project,
                         redis_url=args.redis_url if mode.startswith("redis") else None)
    engine = Engine(config, registry=Registry())
    try:
        hook = engine.webhook("bench", **{**OPTIONS, "concurrency": args.concurrency})
        hook.add_endpoint(url, id="fast")
        fired = time.perf_counter()
        for i in range(args.n):
            hook.fire("order.paid", {"i": i, "to": f"user-{i}@example.com"})
        fire_rate = args.n / (time.perf_counter() - fired)
        env = child_env({"OQRON_MODE": mode, "OQRON_DATABASE_URL": database_url, "OQRON_PROJECT": project,
                         "OQRON_REDIS_URL": args.redis_url if mode.startswith("redis") else "",
                         "BENCH_WH_CONCURRENCY": str(args.concurrency)})
        log = tempfile.TemporaryFile()  # noqa: SIM115 - closed below; a file, not a pipe, never blocks the worker
        worker = subprocess.Popen([sys.executable, "-m", "oqronkit", "worker", "--import", "webhook_app",
                                   "--log-level", "warning", "--cpu-affinity", args.cpu_affinity],
                                  cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            left, last_change, last_left = args.n, time.monotonic(), None
            while left:
                time.sleep(0.2)
                left = engine.durable.count("queue_job:webhook/bench")
                if left != last_left:
                    last_left, last_change = left, time.monotonic()
                if time.monotonic() - last_change > args.stall_timeout:
                    raise BenchError(f"{mode}: {left} deliveries left, no progress for {args.stall_timeout} s")
                if worker.poll() is not None:
                    log.seek(0)
                    raise BenchError(f"{mode}: the worker exited: {log.read()[-2000:].decode(errors='replace')}")
        finally:
            worker.send_signal(signal.SIGTERM)
            try:
                worker.wait(30)
            except subprocess.TimeoutExpired:
                worker.kill()
            log.close()
        runs = webhook_runs(engine)
        problems = check(engine, runs, args.n)
        if problems:
            raise BenchError(f"{mode}: " + "; ".join(problems))
        span = (max(r["endedAt"] for r in runs) - min(r["startedAt"] for r in runs)) / 1000
        return {"rate": args.n / span, "seconds": span, "fire_rate": fire_rate}
    finally:
        engine.close()
        if mode.startswith("redis"):
            drop_redis_keys(args.redis_url, project)


def webhook_runs(engine: Any) -> list[dict[str, Any]]:
    runs, cursor = [], None
    while True:
        page = engine.durable.list("runs", module="webhook", limit=1000, cursor=cursor)
        runs += [r.value for r in page.records]
        if page.next_cursor is None:
            return runs
        cursor = page.next_cursor


def check(engine: Any, runs: list[dict[str, Any]], n: int) -> list[str]:
    problems = []
    completed = [r for r in runs if r["status"] == "completed" and r["response"]["status"] == 200]
    if len(completed) != n or len({r["jobId"] for r in completed}) != n:
        problems.append(f"{len(completed)} completed runs for {n} deliveries")
    for namespace in ("queue_job:webhook/bench", "queue_dlq:webhook/bench"):
        if engine.durable.count(namespace):
            problems.append(f"{engine.durable.count(namespace)} rows left in {namespace}")
    return problems


def drop_redis_keys(url: str, project: str) -> None:
    import redis

    client = redis.Redis.from_url(url)
    try:
        doomed = list(client.scan_iter(match=f"oqron:{project}:*", count=1000))
        for start in range(0, len(doomed), 1000):
            client.delete(*doomed[start:start + 1000])
    finally:
        client.close()


def create_schema(pg_url: str) -> str:
    import psycopg

    schema = f"bench_webhooks_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')  # our own generated name
    return schema


def drop_schema(pg_url: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')  # our own generated name


def med(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def report(results: dict[str, list[dict[str, Any]]], args: argparse.Namespace) -> None:
    load = os.getloadavg()
    print(f"\n{args.n} deliveries, {args.concurrency} in flight, median of {args.repeat}; "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{'system':<16}{'deliveries/s':>14}{'vs floor':>10}{'(ratio of medians)':>20}{'fire/s':>10}")
    floor = results[FLOOR]
    for name, runs in results.items():
        rate = med([r["rate"] for r in runs])
        fire = med([r["fire_rate"] for r in runs if "fire_rate" in r])
        if name == FLOOR:
            print(f"{name:<16}{rate or 0:>14,.0f}{'1.00x':>10}{'':>20}{'':>10}")
            continue
        paired = [r["rate"] / f["rate"] for r, f in zip(runs, floor, strict=False)]
        ratio = med(paired)
        of_medians = (rate or 0) / (med([f["rate"] for f in floor]) or 1)
        verdict = "PASS" if ratio is not None and ratio >= 0.5 else "FAIL"
        print(f"{name:<16}{rate or 0:>14,.0f}{(ratio or 0):>9.2f}x{of_medians:>19.2f}x{fire or 0:>10,.0f}  {verdict}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, out of {', '.join(MODES)}")
    parser.add_argument("--n", type=int, default=5_000, help="deliveries per run")
    parser.add_argument("--concurrency", type=int, default=20, help="deliveries in flight (threads / slots)")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved runs of every system; medians reported")
    parser.add_argument("--seed", type=int, default=0, help="seed of the shuffled order")
    parser.add_argument("--quick", action="store_true", help="smoke run: N 500, repeat 1")
    parser.add_argument("--cpu-affinity", choices=("auto", "off"), default="auto", help="the worker's option")
    parser.add_argument("--pg-url", default=os.environ.get("BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres"))
    parser.add_argument("--redis-url", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0"))
    parser.add_argument("--stall-timeout", type=float, default=60.0, help="seconds without progress before failing")
    parser.add_argument("--json", type=Path, default=None, help="also write every run's figures here")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.repeat = 500, 1
    args.modes = [m for m in args.modes.split(",") if m]
    unknown = set(args.modes) - set(MODES)
    if unknown:
        parser.error(f"unknown mode(s): {', '.join(sorted(unknown))}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sys.path[:0] = [str(ROOT), str(PEERS)]
    schema = create_schema(args.pg_url)
    receiver, port = start_receiver()
    url = f"http://127.0.0.1:{port}/hook"
    results: dict[str, list[dict[str, Any]]] = {FLOOR: [], **{m: [] for m in args.modes}}
    order = random.Random(args.seed)
    try:
        for repetition in range(args.repeat):
            systems = [FLOOR, *args.modes]
            order.shuffle(systems)
            for system in systems:
                got = run_floor(args, url) if system == FLOOR else run_ours(
                    args, system, url, schema_url(args.pg_url, schema))
                results[system].append(got)
                print(f"[{repetition + 1}/{args.repeat}] {system}: {got['rate']:,.0f} deliveries/s", flush=True)
    except BenchError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    finally:
        receiver.kill()
        receiver.wait()
        drop_schema(args.pg_url, schema)
    report(results, args)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
