"""capacity.py's model and its report: the cluster ceiling from CPU per job, the prediction
on this machine, and the model check (own, from p1, and from p1 scaled by the machine's
contention factor that bench/contention.py measures). The model is in capacity.py's
docstring."""

from __future__ import annotations

import argparse
import os
import statistics
from typing import Any

NCPU = os.cpu_count() or 1
HOSTS = (1, 2, 4, 8, 16)
#: Which factor of bench/contention.py scales which tier's CPU per job.
FACTOR_OF = {"worker_us": "client_us", "pg_us": "pg_us", "pg_aux_us": "pg_us", "redis_us": "redis_us",
             "redis_main_us": "redis_main_us"}



def predict(costs: dict[str, float], other_cores: float, processes: int, ncpu: int = NCPU) -> tuple[float, str]:
    """Throughput predicted on this machine (see the module docstring) and what binds."""
    total = (costs["worker_us"] + costs["pg_us"] + costs["pg_aux_us"] + costs["redis_us"]) / 1e6
    bounds = {"shared CPU": max(0.0, ncpu - other_cores) / total,
              f"{processes} worker process{'es' if processes > 1 else ''}": processes / (costs["worker_us"] / 1e6)}
    if costs["redis_main_us"] > 0:
        bounds["redis main thread"] = 1e6 / costs["redis_main_us"]
    binding = min(bounds, key=lambda k: bounds[k])
    return bounds[binding], binding


def ceiling(costs: dict[str, float], mode: str, hosts: int, cores_per_host: int, pg_cores: float
            ) -> tuple[float, str]:
    """Projected jobs/s for ``hosts`` worker hosts against one Postgres and one Redis."""
    bounds = {"workers": hosts * cores_per_host / (costs["worker_us"] / 1e6)}
    if mode in ("postgres", "redis-postgres"):
        bounds["postgres"] = pg_cores / ((costs["pg_us"] + costs["pg_aux_us"]) / 1e6)
    if mode in ("redis", "redis-postgres"):
        bounds["redis"] = 1e6 / costs["redis_main_us"]
    binding = min(bounds, key=lambda k: bounds[k])
    return bounds[binding], binding


COST_KEYS = ("worker_us", "pg_us", "pg_aux_us", "redis_us", "redis_main_us")


def machine_factors(calibration: list[dict[int, dict[str, float]]], processes: int) -> dict[str, float] | None:
    """Per tier of the synthetic load, the median over repetitions of cost(P) / cost(1),
    each ratio taken within one repetition (the neighbours' load moves between them)."""
    pairs = [(rep[1], rep[processes]) for rep in calibration if 1 in rep and processes in rep]
    if not pairs:
        return None
    return {tier: statistics.median(many[tier] / one[tier] for one, many in pairs if one[tier] > 0)
            for tier in set(FACTOR_OF.values())}


def scaled(costs: dict[str, float], factors: dict[str, float]) -> dict[str, float]:
    """1-process costs carried to P processes by the machine's contention factors."""
    return {key: costs[key] * factors[FACTOR_OF[key]] for key in COST_KEYS}


def busy_factors(p1_rows: list[dict[str, Any]], busy_rows: list[dict[str, Any]]) -> dict[str, float] | None:
    """Per cost, the median over repetitions of (1 process with CPUs kept busy) / (1 process)."""
    by_rep = {row["rep"]: row for row in p1_rows}
    pairs = [(by_rep[row["rep"]], row) for row in busy_rows if row["rep"] in by_rep]
    if not pairs:
        return None
    return {key: statistics.median(busy[key] / one[key] for one, busy in pairs if one[key] > 0) if any(
        one[key] > 0 for one, _ in pairs) else 1.0 for key in COST_KEYS}


def report_busy(results: dict[tuple[str, int], list[dict[str, Any]]],
                loaded: dict[tuple[str, int], list[dict[str, Any]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if not any(loaded.values()):
        return out
    print("\nThe 1-process runs again with P - 1 CPUs kept busy (a pure-Python loop pinned to each CPU the worker is"
          "\n  not on, over the window): CPU per job, medians, and factor = median of the per-repetition ratios:")
    print(f"{'mode':16} {'P':>2} {'worker':>16} {'pg':>16} {'redis (main)':>16} {'jobs/s':>7} {'other':>6}")
    for (mode, procs), rows in loaded.items():
        factors = busy_factors(results.get((mode, 1)) or [], rows)
        if not rows or factors is None:
            continue
        m = medians(rows)
        out[f"{mode}@{procs}"] = {"factors": factors, "per_job": m}
        cells = [f"{m[k]:.0f} x{factors[k]:.2f}" for k in ("worker_us", "pg_us", "redis_main_us")]
        print(f"{mode:16} {procs:>2} {cells[0]:>16} {cells[1]:>16} {cells[2]:>16} {m['rate']:>7,.0f} "
              f"{m['other_cores']:>6.2f}")
    return out


def report_calibration(calibration: list[dict[int, dict[str, float]]], args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if not calibration:
        return out
    print("\nMachine contention (bench/contention.py: a synthetic unit of Python work + one Postgres query + one"
          "\n  Redis INCR on 5 threads per process, 1 vs P processes pinned, nothing shared; CPU us per unit, medians;"
          "\n  factor = median of the per-repetition ratios):")
    print(f"{'P':>3} {'client':>14} {'postgres':>14} {'redis (main)':>16}  {'units/s':>15}  load")
    for procs in args.process_list:
        factors = machine_factors(calibration, procs)
        if procs == 1 or factors is None:
            continue
        one = {k: statistics.median(rep[1][k] for rep in calibration) for k in calibration[0][1]}
        many = {k: statistics.median(rep[procs][k] for rep in calibration if procs in rep) for k in one}
        out[procs] = {"factors": factors, "one": one, "many": many}
        cells = [f"{one[t]:.0f}->{many[t]:.0f} x{factors[t]:.2f}" for t in ("client_us", "pg_us", "redis_main_us")]
        loads = [rep["load"][0] for rep in calibration if "load" in rep]
        print(f"{procs:>3} {cells[0]:>14} {cells[1]:>14} {cells[2]:>16}  "
              f"{one['units_s']:>6,.0f}->{many['units_s']:<7,.0f}  {min(loads):.1f}-{max(loads):.1f}")
    return out


def medians(rows: list[dict[str, Any]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in rows) for k in rows[0] if isinstance(rows[0][k], (int, float))}


def verdict(err: float) -> str:
    return "PASS" if abs(err) <= 0.15 else "FAIL"


def report(results: dict[tuple[str, int], list[dict[str, Any]]], args: argparse.Namespace,
           calibration: list[dict[int, dict[str, float]]], loaded: dict[tuple[str, int], list[dict[str, Any]]]
           ) -> dict[str, Any]:
    out: dict[str, Any] = {"per_job": {}, "ceiling": {}, "check": []}
    print(f"\nCPU per job, medians of {args.repeat} runs ({args.n} jobs, window from the {args.skip}th completion; "
          f"{NCPU} CPUs):")
    print(f"{'mode':16} {'P':>2} {'jobs/s':>7} {'worker':>7} {'(sup)':>5} {'pg':>6} {'pg aux':>6} {'redis':>6} "
          f"{'(main)':>6}"
          f" {'sum us':>7} {'wrk cores':>9} {'other':>6} {'idle':>5}")
    for (mode, procs), rows in results.items():
        if not rows:
            continue
        m = medians(rows)
        out["per_job"][f"{mode}@{procs}"] = m
        total = m["worker_us"] + m["pg_us"] + m["pg_aux_us"] + m["redis_us"]
        print(f"{mode:16} {procs:>2} {m['rate']:>7,.0f} {m['worker_us']:>7.0f} {m['supervisor_us']:>5.0f} "
              f"{m['pg_us']:>6.0f} "
              f"{m['pg_aux_us']:>6.0f} {m['redis_us']:>6.0f} {m['redis_main_us']:>6.0f} {total:>7.0f} "
              f"{m['worker_cores']:>9.2f} {m['other_cores']:>6.2f} {m['idle_cores']:>5.2f}")
    print("  (us of CPU per job; 'worker' = every process of the worker, '(sup)' = of which the --processes"
          "\n   supervisor; 'pg' = backends of the bench database, 'pg aux' = walwriter, background writer and"
          "\n   checkpointer; 'redis' = all threads, '(main)' = main thread; in postgres and sqlite modes Redis only"
          "\n   runs the bench's counter INCR. wrk cores / other / idle: CPUs used by the workers, by everything"
          "\n   else on the machine (and steal), and left idle, averaged over the window)")

    print(f"\nProjected ceiling: N worker hosts of {args.cores_per_host} cores (one engine process per core) against "
          f"one Postgres of {args.pg_cores:g} cores and one Redis (1 core: its main thread), from the 1-process "
          f"costs:")
    modes = [m for m in args.mode_list if results.get((m, 1))]
    print(f"{'N':>3} " + " ".join(f"{m:>30}" for m in modes))
    for hosts in HOSTS:
        cells = []
        for mode in modes:
            value, binding = ceiling(out["per_job"][f"{mode}@1"], mode, hosts, args.cores_per_host, args.pg_cores)
            out["ceiling"].setdefault(mode, {})[hosts] = {"jobs_s": value, "binding": binding}
            cells.append(f"{value:>11,.0f} jobs/s ({binding})".rjust(30))
        print(f"{hosts:>3} " + " ".join(cells))
    if "sqlite" in modes:
        print("  (sqlite: one file on one host, so the 'workers' column is only the worker's own cost)")
    counter = out["per_job"].get("postgres@1", {}).get("redis_main_us")
    for mode in ("redis-postgres", "redis"):
        if f"{mode}@1" in out["per_job"] and counter:
            # the task body's INCR is all postgres mode does on Redis: take it out of the Redis
            # modes' cost for the engine's own ceiling (a real task does not INCR this Redis)
            costs = dict(out["per_job"][f"{mode}@1"])
            costs["redis_main_us"] = max(1e-3, costs["redis_main_us"] - counter)
            cells = []
            for hosts in HOSTS:
                value, binding = ceiling(costs, mode, hosts, args.cores_per_host, args.pg_cores)
                out["ceiling"].setdefault(f"{mode} (engine only)", {})[hosts] = {"jobs_s": value, "binding": binding}
                cells.append(f"N={hosts}: {value:,.0f} ({binding})")
            print(f"  {mode} without the bench's counter INCR on Redis ({counter:.0f} us/job, postgres mode's Redis "
                  f"CPU):\n    " + ", ".join(cells))

    print(f"\nModel check on this machine ({NCPU} CPUs shared by the workers, Postgres, Redis and everything else):"
          "\n  predicted = min((cpus - other) / sum of CPU per job, P / worker CPU per job, 1 / redis main per job)")
    out["machine"] = report_calibration(calibration, args)
    out["busy"] = report_busy(results, loaded)
    print(f"{'mode':16} {'P':>2} {'measured':>9} {'own':>8} {'err':>6} {'':4} {'from p1':>8} {'err':>6} {'':4}"
          f" {'p1 x mach':>9} {'err':>6} {'':4} {'p1 x busy':>9} {'err':>6} {'':4}  binding (own)")
    for (mode, procs), rows in results.items():
        if not rows:
            continue
        base = results.get((mode, 1)) or []
        base_costs = {k: statistics.median(r[k] for r in base) for k in COST_KEYS} if base else None
        factors = machine_factors(calibration, procs) if procs != 1 else None
        carried = scaled(base_costs, factors) if base_costs is not None and factors is not None else None
        busy = busy_factors(base, loaded.get((mode, procs), [])) if procs != 1 else None
        busied = {k: base_costs[k] * busy[k] for k in COST_KEYS} if base_costs is not None and busy else None
        busy_pred, busy_err = [], []
        own_err, p1_err, own_pred, p1_pred, bindings = [], [], [], [], []
        mach_pred, mach_err = [], []
        for row in rows:
            value, binding = predict(row, row["other_cores"], procs)
            own_pred.append(value)
            own_err.append(value / row["rate"] - 1)
            bindings.append(binding)
            if base_costs is not None:
                value, _ = predict(base_costs, row["other_cores"], procs)
                p1_pred.append(value)
                p1_err.append(value / row["rate"] - 1)
            if carried is not None:
                value, _ = predict(carried, row["other_cores"], procs)
                mach_pred.append(value)
                mach_err.append(value / row["rate"] - 1)
            if busied is not None:
                value, _ = predict(busied, row["other_cores"], procs)
                busy_pred.append(value)
                busy_err.append(value / row["rate"] - 1)
        med = statistics.median
        entry = {"mode": mode, "processes": procs, "measured": med(r["rate"] for r in rows),
                 "own": med(own_pred), "own_err": med(own_err),
                 "from_p1": med(p1_pred) if p1_pred else None, "from_p1_err": med(p1_err) if p1_err else None,
                 "from_p1_machine": med(mach_pred) if mach_pred else None,
                 "from_p1_machine_err": med(mach_err) if mach_err else None,
                 "binding": max(set(bindings), key=bindings.count), "runs_own_err": own_err, "runs_p1_err": p1_err,
                 "runs_p1_machine_err": mach_err, "from_p1_busy": med(busy_pred) if busy_pred else None,
                 "from_p1_busy_err": med(busy_err) if busy_err else None, "runs_p1_busy_err": busy_err}
        out["check"].append(entry)
        none = f"{'-':>8} {'-':>6} {'':4}"
        p1 = (f"{entry['from_p1']:>8,.0f} {entry['from_p1_err'] * 100:>+5.1f}% {verdict(entry['from_p1_err'])}"
              if p1_pred and procs != 1 else none)
        mach = (f"{entry['from_p1_machine']:>9,.0f} {entry['from_p1_machine_err'] * 100:>+5.1f}% "
                f"{verdict(entry['from_p1_machine_err'])}" if mach_pred else " " + none)
        mach += (f" {entry['from_p1_busy']:>9,.0f} {entry['from_p1_busy_err'] * 100:>+5.1f}% "
                 f"{verdict(entry['from_p1_busy_err'])}" if busy_pred else "  " + none)
        print(f"{mode:16} {procs:>2} {entry['measured']:>9,.0f} {entry['own']:>8,.0f} {entry['own_err'] * 100:>+5.1f}% "
              f"{verdict(entry['own_err'])} {p1} {mach}  {entry['binding']}")
    print("  (own: each run from its own CPU per job; from p1: from the 1-process medians with the run's own other"
          "\n   load; p1 x mach: the same, each tier's CPU per job scaled by the machine's contention factor above;"
          "\n   p1 x busy: scaled by the 1-process runs' own rise with P - 1 CPUs kept busy (table above);"
          "\n   err = predicted / measured - 1, median over runs; PASS within 15%)")
    return out

