"""A measured capacity model: CPU per job of the worker, Postgres and Redis, the ceiling
it projects for N worker hosts against one Postgres and one Redis, and a check of the
model against measured throughput on this machine.

What is measured. ``bench/throughput.py``'s processing phase (N no-op jobs, payload
``{"i": i, "to": ...}``, the task body one Redis ``INCR`` on the completion counter),
bulk-enqueued with ``add_bulk`` and ``ANALYZE``d, then ``python -m oqronkit worker
--processes P`` on them, per mode (``postgres`` and ``redis-postgres``; ``sqlite`` and
``redis`` for reference). The measuring window runs from the ``--skip``-th completion
(start-up, first claims and pool connections left out) to the N-th. Over it:

* worker CPU: utime + stime (``/proc/<pid>/stat``) of every process in the worker's
  session (the supervisor and its P engine processes), sampled every 0.25 s so a
  process that exits keeps what it used;
* Postgres CPU: the same of the backends connected to the bench's own database
  (``pg_stat_activity.datname``; a new database per invocation, so no other client's
  backend is in it), plus the server's walwriter, background writer and checkpointer
  (shared with anything else on the server, reported separately as ``pg aux``);
* Redis CPU: ``INFO cpu`` deltas, ``used_cpu_*_main_thread`` (the 1-core bound) and
  ``used_cpu_sys + used_cpu_user`` (everything). By default the script starts its own
  ``redis-server`` on a free loopback port (no persistence, ``noeviction``), so no other
  user of a shared Redis shows up in its CPU; ``--redis-url`` uses another server;
* the machine: ``/proc/stat``'s busy, idle and steal time over all CPUs.

Per job: each CPU delta divided by the jobs completed in the window, in microseconds.
In ``postgres`` and ``sqlite`` modes Redis does nothing but the bench's counter ``INCR``
(the task body), so it counts for this machine's CPU but not for the cluster ceiling.

The ceiling for N worker hosts against one Postgres and one Redis (each host running
one engine process per core, ``--processes = cores``)::

    jobs/s <= min(N * cores_per_host / worker_cpu_per_job,   # the workers
                  pg_cores / pg_cpu_per_job,                  # Postgres (backends + aux)
                  1 / redis_main_thread_cpu_per_job)          # Redis runs commands on one thread

It assumes CPU is the binding resource of each tier and that per-job CPU stays what it
is at this machine's scale: Postgres does not scale perfectly across cores (WAL insert
and lock contention, commit flushes: disk and fsync latency are not CPU and are not in
the model), so its bound is an upper one; per-job CPU of a busy Postgres usually falls
somewhat (group commit, warmer caches), which the other way.

The check on this machine. Here the workers, Postgres and Redis share the same
``ncpu`` cores with everything else running (other benchmarks, builds, browsers): the
per-tier bounds above do not apply; what does is that the three together can use at
most the CPU nobody else uses. Over a run's window, with ``W`` the wall time and
``other`` the busy time of /proc/stat that is none of the three (so it includes this
harness's polling) plus steal time::

    free_cores = ncpu - other / W
    predicted  = min(free_cores / (worker + pg + redis_all per job),   # the shared CPU
                     P / worker per job,          # one engine process runs Python on one core
                     1 / redis main thread per job)

``measured = jobs / W``. The accounting identity ``busy = measured * sum_per_job +
other`` means ``measured = (free_cores - idle / W) / sum``: the prediction assumes the
system saturates what is free (idle 0), or else one of the two single-thread bounds, and
the gap is exactly the CPU left idle because of waits (round trips, commit flushes,
the GIL's hand-overs). It is checked two ways:

* ``own``: each run predicted from its own per-job CPU and other load. Because
  ``other`` is what the three did not use, this is the identity above plus the
  saturation assumption: its error is the idle CPU over what we used (plus anything the
  accounting misses). It says whether the three account for the machine's CPU and
  saturate it, not whether per-job CPU carries over: it is not independent of the run;
* ``from p1``: the P-process runs predicted from the 1-process runs' per-job CPU (the
  medians) and the P-process run's own other load: can the CPU cost measured at one
  scale predict another (this is what the cluster table does). The target is within 15%.
  It misses here because per-job CPU rises with the second process (docs/how-to/scale-out.md);
* ``p1 x mach``: ``from p1`` with each tier's 1-process CPU per job multiplied by the
  machine's contention factor for P processes, from ``bench/contention.py`` (once per
  repetition, interleaved with the runs, ``--calibrate-seconds`` per process count): a
  synthetic client (a fixed piece of Python, one Postgres query and one Redis ``INCR``
  on as many threads as the queue's concurrency, pinned like the engine) run as 1 and as
  P processes that share no row or key; factor = the median of the per-repetition
  ratios cost(P) / cost(1), per tier;
* ``p1 x busy``: ``from p1`` with each cost multiplied by its own rise when the
  1-process run is repeated with P - 1 CPUs kept busy by a pinned pure-Python loop
  (``--no-busy-runs`` leaves these runs out): the CPU contention of P processes, without
  a second claimer or a second engine's round trips; factor = the median of the
  per-repetition ratios.

Neither factor uses the P-process runs (but for their own ``other``, as ``from p1``
does): both are measured on other loads, so the check stays a check.

Caveat on a shared box: ``other`` is not a fixed load. The kernel shares CPU between
runnable tasks (and, with autogroup, between sessions), so the neighbours get less when
two worker processes compete than when one does: on the development machine ``other``
fell from about 1.1-1.3 to 0.6-0.7 cores between the 1- and the 2-process runs. Hence
the run's own ``other`` in every check; a prediction from the load measured before a
run would be off by as much as that load moves.

Usage (from the repository root, with the project's virtualenv)::

    .venv/bin/python bench/capacity.py --repeat 5
    .venv/bin/python bench/capacity.py --modes postgres,redis-postgres,sqlite,redis --processes 1,2
    .venv/bin/python bench/capacity.py --pg-cores 8 --cores-per-host 4   # another deployment's table
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # this folder: throughput.py
sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))  # common.py: the counter's keys

import contention
from capacity_model import NCPU, report
from contention import busy_cpus, context_switches
from throughput import (
    Bench,
    BenchError,
    OqronSystem,
    Worker,
    check_servers,
    drop_keys,
    run_driver,
    wait_for_key,
)

MODES = ("postgres", "redis-postgres", "sqlite", "redis")
PG_AUX = ("walwriter", "background writer", "checkpointer")
TICK = 1.0 / os.sysconf("SC_CLK_TCK")


# -- CPU accounting ---------------------------------------------------------------------


def proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state is [0])."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def cpu_seconds(pid: int) -> float | None:
    fields = proc_stat(pid)
    return None if fields is None else (int(fields[11]) + int(fields[12])) * TICK


def session_pids(sid: int) -> list[int]:
    """Every process in session ``sid`` (the worker runs in its own session)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = proc_stat(int(entry))
            if fields is not None and int(fields[3]) == sid:
                out.append(int(entry))
    return out


def machine_times() -> dict[str, float]:
    """All CPUs' busy, idle (with iowait) and steal time from /proc/stat, in seconds."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = (values + [0] * 8)[:8]
    # guest time is already counted in user/nice
    return {"busy": (user + nice + system + irq + softirq) * TICK, "idle": (idle + iowait) * TICK,
            "steal": steal * TICK}


def redis_cpu(client: Any) -> dict[str, float]:
    info = client.info("cpu")
    main = info.get("used_cpu_sys_main_thread", info["used_cpu_sys"]) + info.get(
        "used_cpu_user_main_thread", info["used_cpu_user"])
    return {"all": float(info["used_cpu_sys"] + info["used_cpu_user"]), "main": float(main)}


@dataclass
class Tracker:
    """CPU of a changing set of processes: each pid's first and latest reading; a pid
    first seen after the start counts from 0 (it started in the window)."""

    first: dict[int, float] = field(default_factory=dict)
    last: dict[int, float] = field(default_factory=dict)
    started: bool = False

    def sample(self, pids: list[int]) -> None:
        for pid in set(pids) | set(self.last):
            value = cpu_seconds(pid)
            if value is None:
                continue  # gone: keep its last reading
            if pid not in self.first:
                self.first[pid] = value if not self.started else 0.0
            self.last[pid] = value
        self.started = True

    def total(self) -> float:
        return sum(self.last[pid] - self.first[pid] for pid in self.last)


class PgWatch:
    """The Postgres processes to account for: backends of the bench's database, and the
    server's WAL writer, background writer and checkpointer."""

    def __init__(self, bench: Bench, database: str | None) -> None:
        self.database = database
        self.conn = bench.pg(bench.maintenance_db) if database else None
        self.backends, self.aux = Tracker(), Tracker()

    def sample(self) -> None:
        if self.conn is None:
            return
        rows = self.conn.execute("SELECT pid, datname, backend_type FROM pg_stat_activity "
                                 "WHERE datname = %s OR backend_type = ANY(%s)",
                                 (self.database, list(PG_AUX))).fetchall()
        self.backends.sample([pid for pid, db, _ in rows if db == self.database])
        self.aux.sample([pid for pid, db, kind in rows if db != self.database and kind in PG_AUX])

    def db_stats(self) -> dict[str, int]:
        """The bench database's cumulative commits and tuples written (pg_stat_database:
        backends report them at most once a second, so a window's delta is approximate)."""
        if self.conn is None:
            return {}
        row = self.conn.execute("SELECT xact_commit, tup_inserted + tup_updated + tup_deleted, tup_fetched "
                                "FROM pg_stat_database WHERE datname = %s", (self.database,)).fetchone()
        return {"commits": int(row[0]), "written": int(row[1]), "fetched": int(row[2])} if row else {}

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


# -- one measured phase -------------------------------------------------------------------


def measure_phase(bench: Bench, system: OqronSystem, n: int, skip: int, *, busy: int = 0) -> dict[str, Any]:
    """Enqueue ``n`` jobs, run the worker on them, and account the CPU of the window
    from the ``skip``-th completion to the ``n``-th; with ``busy``, that many busy loops
    on the CPUs the worker is not pinned to over the window (counted as other load)."""
    from common import keys

    phase = system.fresh(bench, "capacity")
    names = keys(phase.env["BENCH_KEY"])
    rds, monitor = bench.redis(), bench.redis()
    pg = PgWatch(bench, system.database)
    try:
        run_driver(system, phase, ["enqueue", "--mode", "bulk", "--n", str(n), "--chunk", str(bench.args.chunk)],
                   timeout=60 + n / 50)
        system.analyze(bench)
        env = {**phase.env, "BENCH_TARGET": str(n)}
        if bench.args.cpu_affinity:
            env["OQRON_CPU_AFFINITY"] = bench.args.cpu_affinity
        log = bench.scratch / f"{phase.tag}.log"
        with Worker(system.phase_argv(bench, phase), env, log, stop_timeout=bench.args.stop_timeout) as worker, \
                contextlib.ExitStack() as stack:
            assert worker.proc is not None
            sid = worker.proc.pid
            workers, supervisor = Tracker(), Tracker()
            # with --processes > 1 the session leader is the supervisor (no jobs of its own)
            lead = [sid] if system.processes > 1 else []
            began = time.monotonic()
            start: dict[str, Any] | None = None
            last_sample = 0.0
            seen, last_change = -1, began
            while True:
                done = int(rds.get(names["done"]) or 0)
                now = time.monotonic()
                if start is None and done >= skip:
                    if busy:
                        stack.enter_context(busy_cpus(busy, session_pids(sid)))
                    workers.sample(session_pids(sid))
                    supervisor.sample(lead)
                    pg.sample()
                    start = {"t": time.monotonic(), "done": int(rds.get(names["done"]) or 0),
                             "switches": context_switches(session_pids(sid)),
                             "machine": machine_times(), "redis": redis_cpu(monitor), "db": pg.db_stats()}
                    last_sample = now
                elif start is not None and done >= n:
                    end: dict[str, Any] = {"t": time.monotonic(), "done": done, "machine": machine_times(),
                           "switches": context_switches(session_pids(sid)),
                           "redis": redis_cpu(monitor), "db": pg.db_stats()}
                    workers.sample(session_pids(sid))
                    supervisor.sample(lead)
                    pg.sample()
                    break
                elif start is not None and now - last_sample > 0.25:
                    workers.sample(session_pids(sid))
                    pg.sample()
                    last_sample = now
                if done != seen:
                    seen, last_change = done, now
                worker.check_alive()
                if now - last_change > bench.args.stall_timeout or now - began > 60 + n / 5:
                    raise BenchError(f"{done}/{n} jobs after {now - began:.0f} s; worker log {log}")
                time.sleep(0.02)
            stack.close()
            wait_for_key(bench, names["last"])
            code = worker.stop()
        check = system.verify(bench, phase, n)
        if not (check or "").startswith("ok"):
            raise BenchError(f"{system.name}: {check}")
        if code not in (0, -signal.SIGTERM):
            raise BenchError(f"{system.name}: worker stopped with exit code {code}")
    finally:
        pg.close()
        drop_keys(bench, system, phase)
    wall = end["t"] - start["t"]
    jobs = end["done"] - start["done"]
    machine = {k: end["machine"][k] - start["machine"][k] for k in end["machine"]}
    redis_all = end["redis"]["all"] - start["redis"]["all"]
    redis_main = end["redis"]["main"] - start["redis"]["main"]
    worker_s, pg_back, pg_aux = workers.total(), pg.backends.total(), pg.aux.total()
    ours = worker_s + pg_back + pg_aux + redis_all
    other = max(0.0, machine["busy"] - ours) + machine["steal"]
    return {"jobs": jobs, "wall": wall, "rate": jobs / wall,
            "worker_us": worker_s / jobs * 1e6, "supervisor_us": supervisor.total() / jobs * 1e6,
            "pg_us": pg_back / jobs * 1e6, "pg_aux_us": pg_aux / jobs * 1e6,
            "redis_us": redis_all / jobs * 1e6, "redis_main_us": redis_main / jobs * 1e6,
            "other_cores": other / wall, "idle_cores": machine["idle"] / wall,
            "worker_cores": worker_s / wall, "unaccounted_cores": max(0.0, ours - machine["busy"]) / wall,
            # of the threads alive at both ends of the window (an engine's threads live as long as it runs)
            "voluntary_switches_per_job": (end["switches"][0] - start["switches"][0]) / jobs,
            "involuntary_switches_per_job": (end["switches"][1] - start["switches"][1]) / jobs,
            **{f"pg_{k}_per_job": (end["db"][k] - start["db"][k]) / jobs for k in end["db"]}}


# -- set-up --------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def private_redis(scratch: Path) -> Any:
    """A redis-server of our own on a free loopback port, no persistence, noeviction."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise BenchError("no redis-server on PATH: pass --redis-url")
    port = free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--maxmemory-policy", "noeviction", "--dir", str(scratch)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        import redis

        deadline = time.monotonic() + 10
        while True:
            try:
                redis.Redis.from_url(url).ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise BenchError("the private redis-server did not start") from None
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modes", default="postgres,redis-postgres",
                        help=f"comma-separated, out of {', '.join(MODES)} (default postgres,redis-postgres)")
    parser.add_argument("--processes", default="1,2", help="worker --processes counts to run (default 1,2)")
    parser.add_argument("--n", type=int, default=20_000, help="jobs per run (default 20000)")
    parser.add_argument("--skip", type=int, default=None, help="completions before the window opens (default n/5)")
    parser.add_argument("--repeat", type=int, default=5, help="interleaved runs per (mode, processes); medians")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--concurrency", type=int, default=None, help="the queue's concurrency (default: 5)")
    parser.add_argument("--cpu-affinity", choices=("auto", "off"), default=None,
                        help="the workers' OQRON_CPU_AFFINITY (default: the engine's, auto: each process pinned)")
    parser.add_argument("--cores-per-host", type=int, default=NCPU, help=f"worker host cores (default {NCPU})")
    parser.add_argument("--pg-cores", type=float, default=float(NCPU), help=f"Postgres cores (default {NCPU})")
    parser.add_argument("--chunk", type=int, default=1_000, help="jobs per add_bulk call")
    parser.add_argument("--pg-url", default=os.environ.get("BENCH_PG_URL",
                                                           "postgresql://postgres@127.0.0.1:5432/postgres"))
    parser.add_argument("--redis-url", default=None,
                        help="a Redis to use (default: a redis-server of our own on a free port, so that other "
                             "users of a shared Redis stay out of its INFO cpu)")
    parser.add_argument("--stall-timeout", type=float, default=60.0)
    parser.add_argument("--stop-timeout", type=float, default=30.0)
    parser.add_argument("--lock-timeout", type=float, default=1800.0,
                        help="how long to wait for a throughput.py run on the same Postgres to finish")
    parser.add_argument("--no-lock", dest="lock", action="store_false",
                        help="do not take throughput.py's server-wide advisory lock")
    parser.add_argument("--calibrate-seconds", type=float, default=3.0,
                        help="seconds per process count of the machine's contention measurement, once per "
                             "repetition (bench/contention.py; 0: none)")
    parser.add_argument("--no-busy-runs", dest="busy_runs", action="store_false",
                        help="leave out the 1-process runs with P - 1 CPUs kept busy (the 'p1 x busy' check)")
    parser.add_argument("--quick", action="store_true", help="smoke run: n 2000, repeat 1")
    parser.add_argument("--json", type=Path, default=None, help="write every run's figures here")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.repeat = 2_000, 1
    args.skip = args.skip if args.skip is not None else args.n // 5
    args.mode_list = [m.strip() for m in args.modes.split(",") if m.strip()]
    for mode in args.mode_list:
        if mode not in MODES:
            parser.error(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
    try:
        args.process_list = sorted({int(p) for p in args.processes.split(",") if p.strip()})
    except ValueError:
        parser.error("--processes takes comma-separated integers")
    if not args.process_list or args.process_list[0] < 1:
        parser.error("--processes: counts >= 1")
    if not 0 < args.skip < args.n:
        parser.error("--skip must be between 0 and --n")
    # throughput.py's helpers read these from the Bench's args
    args.analyze, args.system_names = True, []
    return args


def calibrate(bench: Bench, args: argparse.Namespace) -> dict[Any, Any]:
    """One repetition of the machine's contention measurement (bench/contention.py): 1
    process and each P of --processes, alternating, as pinned as the workers."""
    out: dict[Any, Any] = {"load": os.getloadavg()}
    for procs in sorted(set(args.process_list) | {1}):
        out[procs] = contention.measure(bench.pg_url, bench.redis_url, procs, seconds=args.calibrate_seconds,
                                        pinned=args.cpu_affinity != "off", threads=args.concurrency or 5)
    print("machine: " + ", ".join(f"{p} process{'es' if p > 1 else ''} {v['client_us']:.0f}/{v['pg_us']:.0f}/"
                                  f"{v['redis_main_us']:.0f}" for p, v in out.items() if p != "load")
          + f" us per unit (client/postgres/redis), load {out['load'][0]:.2f}", flush=True)
    return out


def run(args: argparse.Namespace) -> int:
    scratch = Path(tempfile.mkdtemp(prefix="oqron-capacity-"))
    with contextlib.ExitStack() as stack:
        redis_url = args.redis_url or stack.enter_context(private_redis(scratch))
        bench = Bench(args.pg_url, redis_url, args, scratch)
        try:
            check_servers(bench)
            if args.lock:
                bench.take_lock(args.lock_timeout)
            systems = {(mode, p): OqronSystem(mode, concurrency=args.concurrency, processes=p)
                       for mode in args.mode_list for p in args.process_list}
            for system in systems.values():
                system.prepare(bench)
            results: dict[tuple[str, int], list[dict[str, Any]]] = {key: [] for key in systems}
            shuffle = random.Random(args.seed).shuffle
            print(f"Redis {redis_url}{' (private)' if not args.redis_url else ''}; {NCPU} CPUs; "
                  f"load {os.getloadavg()[0]:.2f}", flush=True)
            calibration: list[dict[Any, Any]] = []
            # the 1-process runs again with P - 1 CPUs kept busy: the P-process runs' CPU contention, no second engine
            loaded: dict[tuple[str, int], list[dict[str, Any]]] = {
                (mode, p): [] for mode in args.mode_list for p in args.process_list
                if p > 1 and args.busy_runs and 1 in args.process_list}
            for rep in range(args.repeat):
                order: list[tuple[str, int, str]] = [(*key, "") for key in systems] + [(*key, "busy") for key in loaded]
                order += [("machine", 0, "")] if args.calibrate_seconds else []
                shuffle(order)
                for mode, procs, variant in order:
                    began = time.monotonic()
                    if mode == "machine":
                        calibration.append(calibrate(bench, args))
                        continue
                    label = f"{mode}@{procs}" if not variant else f"{mode}@1 + {procs - 1} busy CPU"
                    try:
                        row = measure_phase(bench, systems[(mode, 1 if variant else procs)], args.n, args.skip,
                                            busy=procs - 1 if variant else 0)
                    except BenchError as exc:
                        print(f"run {rep + 1}/{args.repeat} {label}: FAILED {exc}", flush=True)
                        continue
                    row["rep"] = rep
                    (loaded if variant else results)[(mode, procs)].append(row)
                    print(f"run {rep + 1}/{args.repeat} {label}: {row['rate']:,.0f} jobs/s, worker "
                          f"{row['worker_us']:.0f} pg {row['pg_us']:.0f}+{row['pg_aux_us']:.0f} redis "
                          f"{row['redis_us']:.0f} ({row['redis_main_us']:.0f}) us/job, other "
                          f"{row['other_cores']:.2f} idle {row['idle_cores']:.2f} cores"
                          + (f", pg commits {row['pg_commits_per_job']:.2f} written {row['pg_written_per_job']:.2f} "
                             f"fetched {row['pg_fetched_per_job']:.1f} /job" if "pg_commits_per_job" in row else "")
                          + f", switches {row['voluntary_switches_per_job']:.2f} + "
                          f"{row['involuntary_switches_per_job']:.2f} /job ({time.monotonic() - began:.0f} s)",
                          flush=True)
            summary = report(results, args, calibration, loaded)
            if args.json is not None:
                args.json.write_text(json.dumps({"args": {k: v for k, v in vars(args).items() if k != "json"},
                                                 "runs": {f"{m}@{p}": rows for (m, p), rows in results.items()},
                                                 "calibration": calibration,
                                                 "busy_runs": {f"{m}@{p}": rows for (m, p), rows in loaded.items()},
                                                 **summary}, indent=1, default=str))
            return 0 if all(results.values()) and all(loaded.values()) else 1
        finally:
            with contextlib.suppress(Exception):
                bench.drop_databases()
            bench.release_lock()
            shutil.rmtree(scratch, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
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
