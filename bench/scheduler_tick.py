"""Scheduler tick CPU with 10,000 definitions (the issue's bound: under 50 ms per tick).

    .venv/bin/python bench/scheduler_tick.py [--definitions 10000] [--ticks 300]
        [--step-ms 200] [--mode memory|sqlite] [--limit-ms 50]

Declares N crons on a fresh engine: 6-field expressions firing once a minute, their
second spread over the minute (``S * * * * *`` with S = i mod 60), so about N/60 come due
each second, as a fleet of minute-level crons does. A controllable clock moves
``--step-ms`` per tick: 200 by default, the leader's real tick interval (``--step-ms 1000``
puts five ticks' worth of fires into each one).

A tick's CPU is ``time.process_time()`` (every thread of the process) around ``tick()``
plus waiting for the no-op handlers it started: claiming, pointer updates, the handlers
and writing their final runs. The heap means a tick touches only what is due; the idle
tick (nothing due) shows the fixed cost. Reported apart: the first tick as leader (store
the definitions, load, build the index) and the recovery pass the leader runs beside the
tick (it queries the runs table; on the memory engine that query scans every run).
Exits non-zero if the mean firing tick is over ``--limit-ms``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import oqronkit
import oqronkit.scheduler.control as control
from oqronkit import Engine, OqronConfig, Registry
from oqronkit.namespaces import RUNS
from oqronkit.scheduler import Scheduler

START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


class Clock:
    def __init__(self) -> None:
        self.now = START_MS

    def __call__(self) -> int:
        return self.now


def cpu_ms(fn: Callable[[], object]) -> tuple[float, object]:
    started = time.process_time()
    result = fn()
    return (time.process_time() - started) * 1000, result


def build(args: argparse.Namespace, clock: Clock) -> tuple[Engine, Scheduler]:
    if args.mode == "memory":
        config = OqronConfig(mode="memory", database_url=None, project="bench")
    else:
        path = Path(tempfile.mkdtemp()) / "bench.sqlite3"
        config = OqronConfig(mode="sqlite", database_url=f"sqlite:///{path}", project="bench")
    engine = Engine(config, registry=Registry())
    control.clock = clock  # operator-side time, for consistency (the bench does not use it)
    for i in range(args.definitions):
        oqronkit.cron(f"c{i}", f"{i % 60} * * * * *", handler=lambda ctx: None, engine=engine)
    scheduler = Scheduler(engine, worker_id="bench", clock=clock, background=False, threads=8)
    scheduler.set_leader(True)
    return engine, scheduler


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--definitions", type=int, default=10_000)
    parser.add_argument("--ticks", type=int, default=300)
    parser.add_argument("--step-ms", type=int, default=200, help="clock advance per tick")
    parser.add_argument("--mode", choices=["memory", "sqlite"], default="memory")
    parser.add_argument("--limit-ms", type=float, default=50.0)
    args = parser.parse_args()
    clock = Clock()
    engine, scheduler = build(args, clock)

    def busy_tick() -> int:
        started = scheduler.tick()
        scheduler.executor.wait_idle(60)
        return started  # type: ignore[no-any-return]

    wall = time.perf_counter()
    load_cpu, _ = cpu_ms(busy_tick)  # stores the definitions, builds the heap, fires second 0
    load_wall = (time.perf_counter() - wall) * 1000
    recovery_cpu, _ = cpu_ms(scheduler.recover)
    gc_passes: list[int] = []
    gc.callbacks.append(lambda phase, info: phase == "start" and info["generation"] == 2 and gc_passes.append(1))
    ticks: list[tuple[float, int, bool]] = []  # (CPU ms, runs started, a full GC ran inside)
    for _ in range(args.ticks):
        clock.now += args.step_ms
        before = len(gc_passes)
        spent, started = cpu_ms(busy_tick)
        ticks.append((spent, started, len(gc_passes) > before))  # type: ignore[arg-type]
    scheduler._next_recover = 0  # measure one more pass, now with every run stored
    late_recovery_cpu, _ = cpu_ms(scheduler.recover)
    idle = [cpu_ms(scheduler.tick)[0] for _ in range(200)]
    runs = engine.durable.count(RUNS)
    scheduler.shutdown(wait=5)
    engine.close()

    firing = [t for t in ticks if t[1]]
    cpu = sorted(t[0] for t in firing if not t[2])
    mean = statistics.fmean(cpu)
    with_gc = [t[0] for t in firing if t[2]]
    print(f"scheduler tick: {args.definitions:,} definitions, {args.mode} engine, clock +{args.step_ms} ms per tick")
    per_tick = statistics.fmean(t[1] for t in firing)
    print(f"  ticks that fire: {len(firing)} of {len(ticks)}, {per_tick:.0f} runs each; CPU mean {mean:.1f} ms, "
          f"median {statistics.median(cpu):.1f} ms, p95 {cpu[int(len(cpu) * 0.95) - 1]:.1f} ms, max {cpu[-1]:.1f} ms")
    if with_gc:
        where = " (the memory engine keeps every record in it)" if args.mode == "memory" else ""
        print(f"  ({len(with_gc)} tick(s) ran a full garbage collection of the process heap{where}: "
              f"{', '.join(f'{t:.0f}' for t in with_gc)} ms; not counted above)")
    print(f"  per fire: {mean / per_tick:.2f} ms CPU (claim, pointer, handler, final run)")
    print(f"  over all {len(ticks)} ticks: mean {statistics.fmean(t[0] for t in ticks):.1f} ms; "
          f"idle tick (nothing due): {statistics.fmean(idle) * 1000:.0f} us")
    print(f"  first tick as leader (store + load + index + fire): {load_cpu:,.0f} ms CPU ({load_wall:,.0f} ms wall)")
    print(f"  recovery pass beside the tick: {recovery_cpu:.1f} ms at start, {late_recovery_cpu:.1f} ms with "
          f"{runs:,} runs stored")
    ok = mean < args.limit_ms
    print(f"  {'OK' if ok else 'OVER'}: a firing tick costs {mean:.1f} ms CPU on average, bound {args.limit_ms:.0f} ms")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
