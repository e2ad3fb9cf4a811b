"""The producer side of every system, behind one command line.

Each system's driver script hands :func:`main` its enqueue functions; the harness runs
the script in that system's virtualenv and reads the one JSON line it prints. Only the
enqueue calls are timed: imports, connections and schema checks happen in ``warm_up``.

Commands::

    enqueue --mode single|bulk --n N [--chunk 1000] [--start 0]
    latency --n 200 --gap 0.02
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from common import client, keys, payload

AddOne = Callable[[dict[str, Any]], Any]
AddMany = Callable[[list[dict[str, Any]]], Any]


def enqueue(add_one: AddOne, add_many: AddMany | None, *, mode: str, n: int, chunk: int, start: int) -> dict:
    """Enqueue ``n`` jobs one call each (single) or ``chunk`` per call (bulk)."""
    bulk = mode == "bulk" and add_many is not None
    began = time.perf_counter()
    if bulk:
        assert add_many is not None
        for first in range(start, start + n, chunk):
            add_many([payload(i) for i in range(first, min(first + chunk, start + n))])
    else:
        for i in range(start, start + n):
            add_one(payload(i))
    seconds = time.perf_counter() - began
    return {"mode": "bulk" if bulk else "single", "n": n, "seconds": seconds, "rate": n / seconds}


def wait_for_count(target: int, timeout: float) -> None:
    """Block until the phase's completion counter reaches ``target``."""
    done = keys(os.environ["BENCH_KEY"])["done"]
    deadline = time.monotonic() + timeout
    while int(client().get(done) or 0) < target:
        if time.monotonic() > deadline:
            raise SystemExit(f"latency warm-up: the worker ran no job within {timeout:.0f} s")
        time.sleep(0.01)


def latency(add_one: AddOne, *, n: int, gap: float, warm_timeout: float) -> dict:
    """One warm-up job (so the worker is up and idle), then ``n`` stamped jobs ``gap`` apart."""
    add_one(payload(-1))
    wait_for_count(1, warm_timeout)
    time.sleep(0.5)  # let the worker go back to its idle wait
    calls = []
    began = time.perf_counter()
    for i in range(n):
        t0 = time.perf_counter()
        add_one(payload(i, stamp=True))
        calls.append(time.perf_counter() - t0)
        pause = began + (i + 1) * gap - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
    return {"n": n, "enqueue_call_ms_p50": statistics.median(calls) * 1000}


def main(*, add_one: AddOne, add_many: AddMany | None = None, warm_up: Callable[[], None] | None = None,
         tear_down: Callable[[], None] | None = None, argv: Sequence[str] | None = None) -> None:
    """Parse the command, warm up, run it, print the result as one JSON line, tear down."""
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    enq = sub.add_parser("enqueue")
    enq.add_argument("--mode", choices=["single", "bulk"], required=True)
    enq.add_argument("--n", type=int, required=True)
    enq.add_argument("--chunk", type=int, default=1000)
    enq.add_argument("--start", type=int, default=0)
    lat = sub.add_parser("latency")
    lat.add_argument("--n", type=int, default=200)
    lat.add_argument("--gap", type=float, default=0.02)
    lat.add_argument("--warm-timeout", type=float, default=60.0)
    args = parser.parse_args(argv)
    if warm_up is not None:
        warm_up()
    if args.command == "enqueue":
        result = enqueue(add_one, add_many, mode=args.mode, n=args.n, chunk=args.chunk, start=args.start)
    else:
        result = latency(add_one, n=args.n, gap=args.gap, warm_timeout=args.warm_timeout)
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    if tear_down is not None:
        tear_down()
