"""Job-queue throughput: our engine (sqlite, postgres, redis-postgres and redis modes)
against Procrastinate and django-tasks-db (Postgres) and RQ, Celery, Dramatiq and Huey
(Redis), on the peer workload described in ``docs/explanation/benchmarks.md``.

N no-op jobs with payload ``{"i": i, "to": "user-i@example.com"}``; every system's task
body is one Redis ``INCR`` on a completion counter (``bench/peers/common.py``), which the
harness polls. Per system and repeat, with clean state before every phase:

1. single enqueue: one call per job, ``--single-n`` jobs;
2. bulk enqueue: ``add_bulk`` / ``batch_defer`` / ``enqueue_many`` in chunks of ``--chunk``
   (django-tasks, Celery, Dramatiq and Huey have no bulk API: their single enqueue of N is
   reported there, marked ``*``);
3. processing: ``ANALYZE`` (as autovacuum would have by then; ``--no-analyze`` skips it),
   then ONE worker process on the N bulk-enqueued jobs, timed from spawn until N tasks
   ran, and from the first completion (start-up excluded); the counter must end at N;
4. latency: ``--latency-n`` jobs ``--latency-gap`` apart into an idle worker; each task
   pushes ``start - enqueue time`` (the enqueue time travels in the payload);
5. our engine: every job left exactly one completed run record (none with recording off).

Systems: ``--systems`` takes names or the groups ``postgres`` (the default), ``redis`` and
``all``; ``oqron-<mode>@N`` runs our worker with ``--processes N`` (``--oqron-processes``
sets N for the names without ``@``), so ``oqron-redis-postgres,oqron-redis-postgres@2``
measures the scaling of a second process; ``oqron-<mode>-signal`` is the same row with a
no-op ``completed`` lifecycle callback on the queue (``oqron-postgres,oqron-postgres-signal``:
what a registered callback costs the worker). Redis peers use the ``--redis-url`` server,
each phase under its own key namespace, deleted afterwards (nothing is flushed).

The peers run in their own virtualenv (``bench/.peers-venv``, created on first use from
``bench/requirements-peers.txt``), our engine in ``bench/.oqron-venv``: the same interpreter
with the engine's runtime requirements only (``--engine-env dev``: this .venv instead; see
``bench/engine_venv.py``). Figures are medians of ``--repeat`` interleaved runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ab_table import print_ab  # this folder: the scripts' own
from checkouts import describe, other_checkout, unlink_matching
from engine_venv import ensure_engine_venv
from targets36 import issue36_targets

from oqronkit.namespaces import RUNS

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT / "bench" / "peers"
PEERS_VENV = ROOT / "bench" / ".peers-venv"
PEERS_REQUIREMENTS = ROOT / "bench" / "requirements-peers.txt"
OUR_PYTHON = sys.executable
POSTGRES_SYSTEMS = ("oqron-sqlite", "oqron-postgres", "oqron-postgres-norec", "oqron-postgres-batch",
                    "django-tasks-oqron", "procrastinate", "django-tasks")
REDIS_SYSTEMS = ("oqron-redis-postgres", "oqron-redis-postgres-batch", "oqron-redis", "rq", "celery", "dramatiq",
                 "huey")
#: The ``-batch`` rows: the same jobs through a batch handler of this many (issue 26).
BENCH_BATCH = 100
# Our CLI worker with --metrics-port 0 (its Prometheus series on): against oqron-postgres, the metrics' cost.
METRICS_SYSTEMS = ("oqron-postgres-metrics",)
ALL_SYSTEMS = POSTGRES_SYSTEMS + REDIS_SYSTEMS + METRICS_SYSTEMS
SYSTEM_GROUPS = {"postgres": POSTGRES_SYSTEMS, "redis": REDIS_SYSTEMS, "all": ALL_SYSTEMS}
BASELINE = "procrastinate"
REDIS_PEERS = ("rq", "celery", "dramatiq", "huey")
LOCK_KEY = 0x0B0E4C4B  # pg_advisory_lock key serialising throughput.py runs on one server


class BenchError(Exception):
    """A phase (or the set-up) failed; the message says why."""


# -- small helpers ---------------------------------------------------------------------


def with_database(url: str, name: str) -> str:
    """``url`` pointing at database ``name``."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


def tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def group_cpu_seconds(pgid: int) -> float:
    """utime + stime of the live processes in process group ``pgid``, in seconds."""
    ticks = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # fields after the name: state, ppid, pgrp, ...
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def peak_rss_mib(pid: int) -> float | None:
    """The process's peak resident set (VmHWM), in MiB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


# -- the harness context -----------------------------------------------------------------


@dataclass
class Bench:
    """Servers, options and scratch space shared by every system."""

    pg_url: str
    redis_url: str
    args: argparse.Namespace
    scratch: Path
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    counter: int = 0
    databases: list[str] = field(default_factory=list)
    lock_conn: Any = None

    def redis(self) -> Any:
        import redis

        return redis.Redis.from_url(self.redis_url)

    def pg(self, database: str) -> Any:
        import psycopg

        return psycopg.connect(with_database(self.pg_url, database), autocommit=True, connect_timeout=5)

    def next_tag(self, system: str, phase: str) -> str:
        self.counter += 1
        system = system.replace("@", "-p").replace("~", "-")  # oqron-redis@2, ~base: tags become project and key names
        return f"{system}-{phase}-{self.run_id}-{self.counter}"

    @property
    def maintenance_db(self) -> str:
        return urlsplit(self.pg_url).path.lstrip("/") or "postgres"

    def database(self, suffix: str) -> str:
        """This invocation's own database for ``suffix``, created on first use and
        dropped at the end, so a concurrent invocation never touches it."""
        name = f"oqron_bench_{self.run_id}" + (f"_{suffix}" if suffix else "")
        if name not in self.databases:
            with self.pg(self.maintenance_db) as conn:
                conn.execute(f'CREATE DATABASE "{name}"')
            self.databases.append(name)
        return name

    def drop_databases(self) -> None:
        with self.pg(self.maintenance_db) as conn:
            for name in self.databases:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.databases.clear()

    def take_lock(self, timeout: float) -> None:
        """Hold a server-wide advisory lock for the whole run: two invocations on one
        machine would only measure each other, so the second one waits."""
        self.lock_conn = self.pg(self.maintenance_db)
        deadline = time.monotonic() + timeout
        told = False
        while not self.lock_conn.execute("SELECT pg_try_advisory_lock(%s)", (LOCK_KEY,)).fetchone()[0]:
            if time.monotonic() > deadline:
                raise BenchError(f"another bench/throughput.py run held the lock for {timeout:.0f} s; giving up")
            if not told:
                print("another bench/throughput.py run is in progress; waiting for it ...", flush=True)
                told = True
            time.sleep(2)

    def release_lock(self) -> None:
        if self.lock_conn is not None:
            self.lock_conn.close()  # ends the session, and with it the advisory lock
            self.lock_conn = None

    def truncate(self, database: str, prefix: str, *, required: bool = True) -> None:
        """Empty every public table named ``prefix*`` and checkpoint, so the next
        phase starts from clean tables and no earlier WAL is flushed during it."""
        with self.pg(database) as conn:
            names = [r[0] for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE %s",
                (prefix.replace("_", r"\_") + "%",)).fetchall()]
            # The epoch row stays: emptied with the rest it reads as a server crash to the
            # next phase's processes, which would log it and signal everything again.
            names = [n for n in names if n != "oqron_hot_epoch"]
            if required and not names:
                raise BenchError(f"no table named {prefix}* in database {database}: cannot reset its state")
            if names:
                conn.execute("TRUNCATE " + ", ".join(f'"{n}"' for n in names) + " RESTART IDENTITY CASCADE")
            conn.execute("CHECKPOINT")


def check_servers(bench: Bench) -> None:
    """Fail early, and clearly, when Postgres or Redis is not there."""
    try:
        bench.redis().ping()
    except Exception as exc:
        raise BenchError(f"Redis at {bench.redis_url} is not answering ({exc}); start it or pass --redis-url.") from exc
    try:
        with bench.pg(urlsplit(bench.pg_url).path.lstrip("/") or "postgres") as conn:
            conn.execute("SELECT 1")
    except Exception as exc:
        raise BenchError(f"PostgreSQL at {bench.pg_url} is not answering ({exc}); start it or pass --pg-url.") from exc


# -- systems -------------------------------------------------------------------------------


@dataclass
class Phase:
    """One phase's clean state: the environment its processes get and its Redis keys."""

    tag: str
    env: dict[str, str]
    project: str | None = None
    sqlite_path: Path | None = None
    ns: str | None = None  # a Redis peer's key namespace (queue, app or broker name)
    own_keys: list[str] = field(default_factory=list)  # shared-name keys absent before the phase
    cwd: Path = PEERS  # where its processes start: the peers folder of the checkout it runs


class System:
    """How to set up, reset, feed and run one job system."""

    name = ""
    setting = ""
    database: str | None = None  # the Postgres database it uses, set by prepare()
    has_bulk = True
    python = OUR_PYTHON
    driver = ""

    def prepare(self, bench: Bench) -> None:
        """Once per invocation: databases and schema."""

    def fresh(self, bench: Bench, phase_name: str) -> Phase:
        """Clean state for one phase."""
        raise NotImplementedError

    def worker_argv(self, bench: Bench) -> list[str]:
        raise NotImplementedError

    def phase_argv(self, bench: Bench, phase: Phase) -> list[str]:
        """The worker command for one phase (most systems need only ``worker_argv``)."""
        return self.worker_argv(bench)

    def analyze(self, bench: Bench) -> None:
        """Refresh planner statistics after the bulk enqueue, as autovacuum would in a
        running deployment (the reset's TRUNCATE leaves none; see ``--no-analyze``)."""
        if self.database:
            with bench.pg(self.database) as conn:
                conn.execute("ANALYZE")

    def verify(self, bench: Bench, phase: Phase, n: int) -> str | None:
        """Check what the processing phase left behind; None when nothing to check."""
        return None

    def redis_patterns(self, phase: Phase) -> list[str]:
        """SCAN patterns of the Redis keys the phase's processes wrote (deleted afterwards)."""
        return []

    def redis_members(self, phase: Phase) -> list[tuple[str, str]]:
        """(set key, member) pairs the phase added to sets it shares with others (removed afterwards)."""
        return []

    def base_env(self, bench: Bench, tag: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OQRON_", "DJANGO_", "PYTHON"))}
        env.update({"BENCH_REDIS_URL": bench.redis_url, "BENCH_KEY": f"oqbench:{tag}",
                    "PYTHONPATH": str(PEERS), "PYTHONUNBUFFERED": "1"})
        return env


class OqronSystem(System):
    """Our engine in ``sqlite``, ``postgres``, ``redis-postgres`` or ``redis`` mode, run
    recording on or off, with ``--processes N`` (name suffix ``@N`` when N > 1)."""

    def __init__(self, mode: str, *, record_runs: bool = True, concurrency: int | None = None,
                 services: bool = True, processes: int = 1, batch: int = 0, signal: bool = False,
                 metrics: bool = False, root: Path = ROOT, arm: str = "") -> None:
        self.mode = mode
        self.root, self.peers, self.arm = root, root / "bench" / "peers", arm  # --against: the other checkout's
        self.batch = batch
        self.signal = signal  # "-signal": a no-op completed callback on the queue (lifecycle overhead)
        self.metrics = metrics
        self.record_runs = record_runs
        self.concurrency = concurrency
        self.services = services
        self.processes = processes
        self.name = (f"oqron-{mode}" + ("" if record_runs else "-norec") + ("-batch" if batch else "")
                     + ("-metrics" if metrics else "") + ("-signal" if signal else "")
                     + (f"@{processes}" if processes != 1 else "") + (f"~{arm}" if arm else ""))
        self.driver = str(self.peers / "oqron_driver.py")
        conc = f"--concurrency {concurrency}" if concurrency else "concurrency 5 (the Queue default)"
        procs = "1 process" if processes == 1 else f"--processes {processes}"
        if record_runs and services:
            self.setting = f"python -m oqronkit worker, {procs}, {conc}"
        else:
            flags = " ".join(f for f, on in (("--no-record-runs", not record_runs), ("--no-services", not services))
                             if on)
            self.setting = f"bench/peers/oqron_worker.py {flags}, 1 process, {conc}"
        if batch:
            self.setting += f", batch=Batch(size={batch}, max_wait=0.05): one call per batch, one INCRBY"

    def on_checkout(self, root: Path, arm: str) -> OqronSystem:
        """The same system run from another checkout (``--against``), named ``<name>~<arm>``."""
        return OqronSystem(self.mode, record_runs=self.record_runs, concurrency=self.concurrency,
                           services=self.services, processes=self.processes, batch=self.batch, signal=self.signal,
                           metrics=self.metrics, root=root, arm=arm)

    @property
    def uses_redis(self) -> bool:
        return self.mode in ("redis", "redis-postgres")

    def prepare(self, bench: Bench) -> None:
        if self.mode in ("postgres", "redis-postgres"):
            self.database = bench.database(self.arm)  # the other revision's schema may differ

    def fresh(self, bench: Bench, phase_name: str) -> Phase:
        tag = bench.next_tag(self.name, phase_name)
        env = self.base_env(bench, tag)
        env["PYTHONPATH"] = f"{self.peers}{os.pathsep}{self.root}"
        env.update({"OQRON_MODE": self.mode, "OQRON_PROJECT": f"bench-{tag}", "OQRON_ENVIRONMENT": "bench",
                    "OQRON_BENCH_BATCH": str(self.batch)})
        if self.signal:
            env["BENCH_SIGNAL"] = "1"  # oqron_tasks.py registers the no-op callback
        phase = Phase(tag, env, project=env["OQRON_PROJECT"], cwd=self.peers)
        if self.uses_redis:
            env["OQRON_REDIS_URL"] = bench.redis_url
        if self.mode == "sqlite":
            phase.sqlite_path = bench.scratch / f"{tag}.sqlite3"
            env["OQRON_DATABASE_URL"] = f"sqlite:///{phase.sqlite_path}"
        elif self.database:
            bench.truncate(self.database, "oqron_", required=False)  # the engine creates them
            env["OQRON_DATABASE_URL"] = with_database(bench.pg_url, self.database)
        return phase

    def redis_patterns(self, phase: Phase) -> list[str]:
        # keys.py: every key of a scope starts with "oqron:<project>:<environment>:"; each
        # phase has its own project, whose name holds no glob character.
        return [f"oqron:{phase.project}:*"] if self.uses_redis else []

    def worker_argv(self, bench: Bench) -> list[str]:
        extra = ["--concurrency", str(self.concurrency)] if self.concurrency else []
        if self.processes != 1:
            extra += ["--processes", str(self.processes)]
        if self.record_runs and self.services:
            metrics = ["--metrics-port", "0"] if self.metrics else []
            return [self.python, "-m", "oqronkit", "worker", "--import", "oqron_tasks", "--queues", "bench",
                    "--log-level", "warning", *metrics, *extra]
        flags = [f for f, on in (("--no-record-runs", not self.record_runs), ("--no-services", not self.services))
                 if on]
        return [self.python, str(self.peers / "oqron_worker.py"), *flags, *extra]

    def verify(self, bench: Bench, phase: Phase, n: int) -> str | None:
        runs, jobs, completed, left = self._count(bench, phase)
        expected = n if self.record_runs else 0
        if runs == jobs == completed == expected and left == 0:
            return f"ok ({runs} runs)"
        return f"MISMATCH: {runs} runs for {jobs} jobs, {completed} completed, {left} jobs left (want {expected})"

    def _count(self, bench: Bench, phase: Phase) -> tuple[int, int, int, int]:
        """(run records, distinct jobs among them, completed runs, jobs left in oqron_jobs)."""
        if self.mode == "redis":  # no SQL to read: ask the engine's durable plane
            out = run_checked([self.python, str(self.peers / "oqron_verify.py")], phase.env, timeout=300, cwd=phase.cwd,
                              what="bench/peers/oqron_verify.py")
            try:
                got = json.loads(out.strip().splitlines()[-1])
            except (IndexError, ValueError) as exc:
                raise BenchError(f"oqron_verify.py printed no result: {out[-500:]!r}") from exc
            return got["runs"], got["jobs"], got["completed"], got["left"]
        runs_sql = ("SELECT count(*), count(DISTINCT {job}), count(*) FILTER (WHERE {status} = 'completed') "
                    "FROM oqron_runs WHERE project = {p} AND environment = 'bench' AND namespace = {p}")
        jobs_sql = "SELECT count(*) FROM oqron_jobs WHERE project = {p} AND environment = 'bench'"
        if phase.sqlite_path is not None:
            fmt = {"job": "json_extract(value, '$.jobId')", "status": "json_extract(value, '$.status')", "p": "?"}
            with contextlib.closing(sqlite3.connect(phase.sqlite_path)) as conn:
                row = conn.execute(runs_sql.format(**fmt), (phase.project, RUNS)).fetchone()
                left = conn.execute(jobs_sql.format(**fmt), (phase.project,)).fetchone()[0]
            return (*row, left)
        fmt = {"job": "value->>'jobId'", "status": "value->>'status'", "p": "%s"}
        with bench.pg(self.database) as conn:
            row = conn.execute(runs_sql.format(**fmt), (phase.project, RUNS)).fetchone()
            left = conn.execute(jobs_sql.format(**fmt), (phase.project,)).fetchone()[0]
        return (*row, left)


class DjangoTasksOqronSystem(OqronSystem):
    """The same workload through Django's ``@task`` on ``oqronkit.contrib.django.tasks.OqronBackend``
    (postgres mode): enqueued with ``Task.enqueue`` (no bulk API), run by ``manage.py
    runworker`` on the dispatcher queue ``tasks.default``."""

    has_bulk = False

    def __init__(self, *, concurrency: int | None = None, processes: int = 1) -> None:
        super().__init__("postgres", concurrency=concurrency, processes=processes)
        self.name = "django-tasks-oqron" + (f"@{processes}" if processes != 1 else "")
        self.driver = str(PEERS / "djoqron_driver.py")
        conc = f"--concurrency {concurrency}" if concurrency else "concurrency 5 (the Queue default)"
        self.setting = f"manage.py runworker --queues tasks.default, {processes} process(es), {conc}"

    def fresh(self, bench: Bench, phase_name: str) -> Phase:
        phase = super().fresh(bench, phase_name)
        phase.env["DJANGO_SETTINGS_MODULE"] = "djoqron_settings"
        return phase

    def worker_argv(self, bench: Bench) -> list[str]:
        extra = ["--concurrency", str(self.concurrency)] if self.concurrency else []
        if self.processes != 1:
            extra += ["--processes", str(self.processes)]
        return [OUR_PYTHON, str(ROOT / "manage.py"), "runworker", "--queues", "tasks.default", "--log-level",
                "warning", *extra]


class ProcrastinateSystem(System):
    """Procrastinate 3.x, ``worker --concurrency 10``, LISTEN/NOTIFY."""

    name = "procrastinate"
    setting = "procrastinate worker --concurrency 10 (sync task in threads), LISTEN/NOTIFY"
    def __init__(self) -> None:
        self.python = str(PEERS_VENV / "bin" / "python")
        self.driver = str(PEERS / "procrastinate_driver.py")

    def _env(self, bench: Bench, tag: str) -> dict[str, str]:
        env = self.base_env(bench, tag)
        env["BENCH_PG_URL"] = with_database(bench.pg_url, self.database)
        return env

    def prepare(self, bench: Bench) -> None:
        self.database = bench.database("procrastinate")
        run_checked([str(PEERS_VENV / "bin" / "procrastinate"), "--app=procrastinate_app.app", "schema", "--apply"],
                    self._env(bench, "setup"), timeout=120, what="procrastinate schema --apply")

    def fresh(self, bench: Bench, phase_name: str) -> Phase:
        tag = bench.next_tag(self.name, phase_name)
        bench.truncate(self.database, "procrastinate_")
        return Phase(tag, self._env(bench, tag))

    def worker_argv(self, bench: Bench) -> list[str]:
        return [str(PEERS_VENV / "bin" / "procrastinate"), "--app=procrastinate_app.app", "--log-level", "warning",
                "worker", "--concurrency", "10"]


class DjangoTasksSystem(System):
    """django-tasks + django-tasks-db, ``manage.py db_worker`` with its defaults."""

    name = "django-tasks"
    setting = "manage.py db_worker (1 task at a time, 1 s idle poll)"
    has_bulk = False
    def __init__(self) -> None:
        self.python = str(PEERS_VENV / "bin" / "python")
        self.driver = str(PEERS / "djtasks_driver.py")

    def _env(self, bench: Bench, tag: str) -> dict[str, str]:
        env = self.base_env(bench, tag)
        env.update({"BENCH_PG_URL": with_database(bench.pg_url, self.database),
                    "DJANGO_SETTINGS_MODULE": "djtasks_settings"})
        return env

    def prepare(self, bench: Bench) -> None:
        self.database = bench.database("djtasks")
        run_checked([self.python, str(PEERS / "djtasks_manage.py"), "migrate", "-v", "0"],
                    self._env(bench, "setup"), timeout=120, what="django-tasks migrate")

    def fresh(self, bench: Bench, phase_name: str) -> Phase:
        tag = bench.next_tag(self.name, phase_name)
        bench.truncate(self.database, "django_tasks_database_")
        return Phase(tag, self._env(bench, tag))

    def worker_argv(self, bench: Bench) -> list[str]:
        return [self.python, str(PEERS / "djtasks_manage.py"), "db_worker", "-v", "0"]


class RedisPeerSystem(System):
    """A peer on the shared Redis (``--redis-url``). Each phase gets its own namespace
    ``bench-<tag>`` (``BENCH_NS``), which the peer's app module puts into every key it
    makes (a key prefix, or the queue / app / worker / job names); afterwards the harness
    deletes the keys containing it (SCAN + UNLINK) and removes the members the peer adds
    to sets shared with other users of the server. Nothing is flushed."""

    app = ""  # the module under bench/peers with the task
    global_keys: tuple[str, ...] = ()  # keys with a fixed name the peer may create (deleted if it did)

    def __init__(self) -> None:
        self.python = str(PEERS_VENV / "bin" / "python")
        self.driver = str(PEERS / f"{self.app}_driver.py")

    def namespace(self, tag: str) -> str:
        return f"bench-{tag}"

    def fresh(self, bench: Bench, phase_name: str) -> Phase:
        tag = bench.next_tag(self.name, phase_name)
        env = self.base_env(bench, tag)
        ns = self.namespace(tag)
        env["BENCH_NS"] = ns
        r = bench.redis()
        return Phase(tag, env, ns=ns, own_keys=[k for k in self.global_keys if not r.exists(k)])

    def redis_patterns(self, phase: Phase) -> list[str]:
        # the namespace anywhere in the key, at its end or followed by a non-digit (the tag
        # ends with a counter: "...-3" must not match "...-31")
        return [f"*{phase.ns}", f"*{phase.ns}[^0-9]*"]

    def bin(self, name: str) -> str:
        return str(PEERS_VENV / "bin" / name)


class RQSystem(RedisPeerSystem):
    """RQ 3.x, ``SimpleWorker`` (no fork per job); bulk is ``enqueue_many``."""

    name = "rq"
    setting = "rq worker -w rq.worker.SimpleWorker (no fork), Redis"
    app = "rq"
    # the worker's maintenance takes this lock (SET NX EX 600); deleted when the phase made it
    global_keys = ("rq:clean_groups",)

    def phase_argv(self, bench: Bench, phase: Phase) -> list[str]:  # names the phase's queue
        return [self.bin("rq"), "worker", "-w", "rq.worker.SimpleWorker", "--url", bench.redis_url,
                "--name", str(phase.ns), "--logging_level", "WARNING", str(phase.ns)]

    def redis_members(self, phase: Phase) -> list[tuple[str, str]]:
        return [("rq:queues", f"rq:queue:{phase.ns}"), ("rq:workers", f"rq:worker:{phase.ns}")]


class CelerySystem(RedisPeerSystem):
    """Celery 5.x, prefork ``-c 2``, Redis broker, no result backend."""

    name = "celery"
    setting = "celery worker -P prefork -c 2, Redis broker, no result backend"
    app = "celery"
    has_bulk = False

    def phase_argv(self, bench: Bench, phase: Phase) -> list[str]:
        return [self.bin("celery"), "-A", "celery_app", "worker", "-P", "prefork", "-c", "2",
                "--loglevel", "WARNING", "-n", f"{phase.ns}@%h"]


class DramatiqSystem(RedisPeerSystem):
    """Dramatiq 2.x, ``-p 1 -t 8``, RedisBroker."""

    name = "dramatiq"
    setting = "dramatiq -p 1 -t 8, RedisBroker"
    app = "dramatiq"
    has_bulk = False

    def worker_argv(self, bench: Bench) -> list[str]:
        return [self.bin("dramatiq"), "-p", "1", "-t", "8", "--skip-logging", "dramatiq_app"]


class HueySystem(RedisPeerSystem):
    """Huey 3.x, ``huey_consumer -w 4 -k thread``, RedisHuey."""

    name = "huey"
    setting = "huey_consumer -w 4 -k thread, RedisHuey"
    app = "huey"
    has_bulk = False

    def namespace(self, tag: str) -> str:
        return "bench_" + tag.replace("-", "_")  # Huey drops every character but [A-Za-z0-9_] from names

    def worker_argv(self, bench: Bench) -> list[str]:
        return [self.bin("huey_consumer"), "huey_app.huey", "-w", "4", "-k", "thread", "-q"]


def parse_system_name(name: str) -> tuple[str, int]:
    """``oqron-redis-postgres@2`` gives ("oqron-redis-postgres", 2); a name without ``@`` gives count 0."""
    base, sep, count = name.partition("@")
    if not sep:
        return base, 0
    if not count.isdigit() or int(count) < 1:
        raise ValueError(f"{name}: the part after @ must be a process count >= 1")
    return base, int(count)


def build_systems(names: list[str], concurrency: int | None, services: bool = True) -> list[System]:
    """The systems for ``names`` (as parse_args spells them: ``oqron-<mode>@N`` for N > 1 processes)."""
    ours = {"concurrency": concurrency, "services": services}
    peers: dict[str, Any] = {"procrastinate": ProcrastinateSystem, "django-tasks": DjangoTasksSystem,
                             "rq": RQSystem, "celery": CelerySystem, "dramatiq": DramatiqSystem, "huey": HueySystem}
    out: list[System] = []
    for name in names:
        base, count = parse_system_name(name)
        if base in peers:
            out.append(peers[base]())
            continue
        if base == "django-tasks-oqron":
            out.append(DjangoTasksOqronSystem(concurrency=concurrency, processes=count or 1))
            continue
        signal, base = base.endswith("-signal"), base.removesuffix("-signal")
        metrics, base = base.endswith("-metrics"), base.removesuffix("-metrics")
        batch = BENCH_BATCH if base.endswith("-batch") else 0
        norec = base.removesuffix("-batch").endswith("-norec")
        mode = base.removeprefix("oqron-").removesuffix("-batch").removesuffix("-norec")
        out.append(OqronSystem(mode, record_runs=not norec, processes=count or 1, batch=batch, signal=signal,
                               metrics=metrics, **ours))
    return out


# -- processes --------------------------------------------------------------------------


def run_checked(argv: list[str], env: dict[str, str], *, timeout: float, what: str, cwd: Path = PEERS) -> str:
    """Run a command to completion; its stdout, or a BenchError with its stderr."""
    try:
        done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise BenchError(f"{what}: no result within {timeout:.0f} s") from exc
    if done.returncode != 0:
        raise BenchError(f"{what} exited with {done.returncode}:\n{(done.stderr or done.stdout)[-2000:]}")
    return done.stdout


def run_driver(system: System, phase: Phase, args: list[str], *, timeout: float) -> dict[str, Any]:
    """Run the system's producer once and parse the JSON line it prints."""
    out = run_checked([system.python, system.driver, *args], phase.env, timeout=timeout, cwd=phase.cwd,
                      what=f"{system.name} {' '.join(args)}")
    try:
        return json.loads(out.strip().splitlines()[-1])
    except (IndexError, ValueError) as exc:
        raise BenchError(f"{system.name} driver printed no result: {out[-500:]!r}") from exc


class Worker:
    """One worker process in its own process group, logging to a file; stopped with
    SIGTERM (drain) and, failing that, SIGKILL of its group."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path, *, stop_timeout: float,
                 cwd: Path = PEERS) -> None:
        self.argv, self.env, self.log, self.stop_timeout, self.cwd = argv, env, log, stop_timeout, cwd
        self.proc: subprocess.Popen[bytes] | None = None
        self.spawned_at = 0.0

    def __enter__(self) -> Worker:
        with open(self.log, "ab") as out:
            self.spawned_at = time.time()
            self.proc = subprocess.Popen(self.argv, env=self.env, cwd=self.cwd, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def check_alive(self) -> None:
        assert self.proc is not None
        code = self.proc.poll()
        if code is not None:
            raise BenchError(f"worker exited early with {code}; log {self.log}:\n{tail(self.log)}")

    def peak_rss(self) -> float | None:
        return peak_rss_mib(self.proc.pid) if self.proc is not None else None

    def cpu_seconds(self) -> float:
        """utime + stime of every live process of the worker's group (its own session)."""
        return group_cpu_seconds(self.proc.pid) if self.proc is not None else 0.0

    def stop(self) -> int | None:
        """Graceful stop; returns the exit code (None when it had to be killed)."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return proc.returncode if proc else None
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout=self.stop_timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
            return None


def wait_for_count(bench: Bench, worker: Worker, key: str, target: int, *, stall: float, limit: float) -> None:
    """Poll the completion counter until ``target``; fail on a dead worker, on no
    progress for ``stall`` seconds or after ``limit`` seconds."""
    r = bench.redis()
    started = last_change = time.monotonic()
    seen = -1
    while True:
        count = int(r.get(key) or 0)
        now = time.monotonic()
        if count >= target:
            return
        if count != seen:
            seen, last_change = count, now
        worker.check_alive()
        if now - last_change > stall or now - started > limit:
            raise BenchError(f"{count}/{target} tasks ran after {now - started:.0f} s (stalled or too slow); "
                             f"worker log {worker.log}:\n{tail(worker.log)}")
        time.sleep(0.02)


def wait_for_key(bench: Bench, key: str, timeout: float = 10.0) -> float:
    r = bench.redis()
    deadline = time.monotonic() + timeout
    while (value := r.get(key)) is None:
        if time.monotonic() > deadline:
            raise BenchError(f"the task never stamped {key}")
        time.sleep(0.005)
    return float(value)


def drop_keys(bench: Bench, system: System, phase: Phase) -> None:
    """Delete the phase's counter keys and every Redis key its processes wrote."""
    from common import keys  # bench/peers is on sys.path (see main)

    r = bench.redis()
    r.delete(*keys(phase.env["BENCH_KEY"]).values())
    for pattern in system.redis_patterns(phase):
        unlink_matching(r, pattern)
    for key, member in system.redis_members(phase):
        r.srem(key, member)
    if phase.own_keys:
        r.unlink(*phase.own_keys)


# -- phases -----------------------------------------------------------------------------------


def phase_enqueue(bench: Bench, system: System, *, mode: str, n: int) -> dict[str, Any]:
    """Time ``n`` enqueues (single calls, or bulk chunks where the system has them)."""
    phase = system.fresh(bench, f"enqueue-{mode}")
    try:
        return run_driver(system, phase, ["enqueue", "--mode", mode, "--n", str(n), "--chunk",
                                          str(bench.args.chunk)], timeout=60 + n / 50)
    finally:
        drop_keys(bench, system, phase)


def phase_process(bench: Bench, system: System, n: int) -> dict[str, Any]:
    """Bulk-enqueue ``n`` jobs (timed), then time one worker process running them."""
    from common import keys

    phase = system.fresh(bench, "process")
    names = keys(phase.env["BENCH_KEY"])
    result: dict[str, Any] = {}
    try:
        enq = run_driver(system, phase, ["enqueue", "--mode", "bulk", "--n", str(n), "--chunk",
                                         str(bench.args.chunk)], timeout=60 + n / 50)
        result["bulk"] = enq["rate"]
        result["bulk_is_single"] = enq["mode"] != "bulk"
        if bench.args.analyze:
            system.analyze(bench)
        env = {**phase.env, "BENCH_TARGET": str(n)}
        log = bench.scratch / f"{phase.tag}.log"
        with Worker(system.phase_argv(bench, phase), env, log, stop_timeout=bench.args.stop_timeout,
                    cwd=phase.cwd) as worker:
            # CPU per job over the jobs after the first tenth: the imports and start-up left out
            skip = n // 10
            wait_for_count(bench, worker, names["done"], skip, stall=bench.args.stall_timeout, limit=60 + n / 5)
            cpu_mark, done_mark = worker.cpu_seconds(), int(bench.redis().get(names["done"]) or 0)
            wait_for_count(bench, worker, names["done"], n, stall=bench.args.stall_timeout, limit=60 + n / 5)
            result["cpu_us"] = (worker.cpu_seconds() - cpu_mark) / max(1, n - done_mark) * 1e6
            last = wait_for_key(bench, names["last"])
            first = wait_for_key(bench, names["first"])
            result["rss_mib"] = worker.peak_rss()
            code = worker.stop()
        result["process"] = n / (last - worker.spawned_at)
        result["process_excl_startup"] = (n - 1) / (last - first) if last > first else None
        result["first_after_s"] = first - worker.spawned_at
        ran = int(bench.redis().get(names["done"]) or 0)
        notes = [f"{ran} tasks ran for {n} jobs"] if ran != n else []
        if code not in (0, -signal.SIGTERM):
            notes.append(f"worker stopped with exit code {code} (None: killed after --stop-timeout)")
        if notes:
            result["notes"] = notes
        result["runs_check"] = system.verify(bench, phase, n)
        return result
    finally:
        drop_keys(bench, system, phase)


def phase_latency(bench: Bench, system: System) -> dict[str, Any]:
    """p50/p99 of enqueue-to-start over ``--latency-n`` jobs spaced ``--latency-gap``."""
    from common import keys

    n = bench.args.latency_n
    phase = system.fresh(bench, "latency")
    names = keys(phase.env["BENCH_KEY"])
    try:
        env = {**phase.env, "BENCH_TARGET": str(n + 1)}
        log = bench.scratch / f"{phase.tag}.log"
        with Worker(system.phase_argv(bench, phase), env, log, stop_timeout=bench.args.stop_timeout,
                    cwd=phase.cwd) as worker:
            out = run_driver(system, phase, ["latency", "--n", str(n), "--gap", str(bench.args.latency_gap)],
                             timeout=90 + n * bench.args.latency_gap * 3)
            wait_for_count(bench, worker, names["done"], n + 1, stall=bench.args.stall_timeout, limit=120)
        values = [float(v) * 1000 for v in bench.redis().lrange(names["latency"], 0, -1)]
        if len(values) != n:
            raise BenchError(f"{len(values)} latency samples, expected {n}")
        return {"lat_p50": percentile(values, 50), "lat_p99": percentile(values, 99),
                "enqueue_call_ms": out.get("enqueue_call_ms_p50")}
    finally:
        drop_keys(bench, system, phase)


def run_system(bench: Bench, system: System) -> dict[str, Any]:
    """All phases of one system once; a failed phase is recorded, the rest still run."""
    result: dict[str, Any] = {"load_before": os.getloadavg()[0]}
    steps = [
        ("single", lambda: {"single": phase_enqueue(bench, system, mode="single", n=bench.args.single_n)["rate"]}),
        ("process", lambda: phase_process(bench, system, bench.args.n)),
        ("latency", lambda: phase_latency(bench, system)),
    ]
    for label, step in steps:
        try:
            result.update(step())
        except Exception as exc:  # one broken phase must not lose the others' figures
            if not isinstance(exc, BenchError):
                exc = BenchError(f"{type(exc).__name__}: {exc}")
            result.setdefault("errors", []).append(f"{label}: {exc}")
            print(f"  ! {system.name} {label} failed: {exc}", file=sys.stderr, flush=True)
    result["load_after"] = os.getloadavg()[0]
    return result


# -- peers' virtualenv ----------------------------------------------------------------------


PEERS_COMMANDS = ("python", "procrastinate", "rq", "celery", "dramatiq", "huey_consumer")


def ensure_peers_venv(python: str) -> None:
    """Create bench/.peers-venv from requirements-peers.txt when it is missing, and
    install the requirements again when one of the peers' commands is not there."""
    if all((PEERS_VENV / "bin" / name).exists() for name in PEERS_COMMANDS):
        return
    env = {**os.environ, "PYENV_VERSION": os.environ.get("PYENV_VERSION", "3.13.0")}
    if not (PEERS_VENV / "bin" / "python").exists():
        print(f"creating {PEERS_VENV} with {python} (one-off) ...", flush=True)
        run_checked([python, "-m", "venv", str(PEERS_VENV)], env, timeout=300, what="python -m venv")
    else:
        print(f"installing bench/requirements-peers.txt into {PEERS_VENV} (one-off) ...", flush=True)
    run_checked([str(PEERS_VENV / "bin" / "pip"), "install", "-q", "-r", str(PEERS_REQUIREMENTS)], env,
                timeout=900, what="pip install -r bench/requirements-peers.txt")


# -- report -------------------------------------------------------------------------------


def fmt(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def collect(runs: list[dict[str, Any]], key: str) -> list[float]:
    return [r[key] for r in runs if r.get(key) is not None]


def summary(results: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Medians per system and metric, plus every run's value."""
    metrics = ("single", "bulk", "process", "process_excl_startup", "cpu_us", "lat_p50", "lat_p99", "rss_mib",
               "enqueue_call_ms", "first_after_s", "load_before", "load_after")
    out: dict[str, dict[str, Any]] = {}
    for name, runs in results.items():
        row: dict[str, Any] = {m: median(collect(runs, m)) for m in metrics}
        row["all"] = {m: collect(runs, m) for m in metrics}
        row["bulk_is_single"] = any(r.get("bulk_is_single") for r in runs)
        row["runs_check"] = [r.get("runs_check") for r in runs if r.get("runs_check")]
        row["errors"] = [e for r in runs for e in r.get("errors", []) + r.get("notes", [])]
        out[name] = row
    return out


def print_table(systems: list[System], med: dict[str, dict[str, Any]], args: argparse.Namespace) -> None:
    print(f"\nEngine {args.engine_revision}. Medians of {args.repeat} run(s); N = {args.n:,} (processing, bulk), "
          f"single enqueue on "
          f"{args.single_n:,}, latency {args.latency_n} jobs {args.latency_gap * 1000:.0f} ms apart. "
          f"Our workers: {args.engine_python}.\n")
    head = ("system", "enqueue single/s", "enqueue bulk/s", "process/s", "process/s excl start-up",
            "worker CPU us/job", "latency p50 ms", "latency p99 ms", "peak RSS MiB", "run records")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for system in systems:
        row = med[system.name]
        bulk = fmt(row["bulk"]) + (" *" if row["bulk_is_single"] else "")
        checks = row["runs_check"]
        check = "-" if not checks else ("ok" if all(c.startswith("ok") for c in checks) else "; ".join(checks))
        cells = (system.name, fmt(row["single"]), bulk, fmt(row["process"]), fmt(row["process_excl_startup"]),
                 fmt(row["cpu_us"]), fmt(row["lat_p50"], 1), fmt(row["lat_p99"], 1), fmt(row["rss_mib"]), check)
        print("| " + " | ".join(cells) + " |")
    if any(med[s.name]["bulk_is_single"] for s in systems):
        print("\n* no bulk API: single enqueue of N jobs, one call each.")
    several = any(getattr(s, "processes", 1) != 1 for s in systems)
    print("\nWorker settings (one process each" + (", @N: N processes" if several else "") + "):")
    for system in systems:
        print(f"  {system.name:22} {system.setting}")
    print("\nEvery run (in order):")
    for system in systems:
        all_ = med[system.name]["all"]
        parts = [f"{m} " + " / ".join(fmt(v, 1 if m.startswith("lat") else 0) for v in all_[m])
                 for m in ("single", "bulk", "process", "process_excl_startup", "lat_p50", "lat_p99") if all_[m]]
        print(f"  {system.name:22} " + "; ".join(parts))


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def print_load(med: dict[str, dict[str, Any]]) -> None:
    """Warn when something else kept the machine busy (the figures are then noisier)."""
    loads = [v for row in med.values() for m in ("load_before", "load_after") for v in row["all"][m]]
    if not loads:
        return
    cores = os.cpu_count() or 1
    note = "" if max(loads) <= cores else f"  (above {cores} cores: other processes competed; expect noise)"
    print(f"\n1-min load average around each system's run: max {max(loads):.1f}, median "
          f"{statistics.median(loads):.1f}{note}")


def fastest_redis_peer(med: dict[str, dict[str, Any]]) -> str | None:
    """The Redis peer with the highest processing rate in this run."""
    measured = [(med[n]["process"], n) for n in REDIS_PEERS if n in med and med[n]["process"]]
    return max(measured)[1] if measured else None


def print_ratios(systems: list[System], med: dict[str, dict[str, Any]], baseline: str | None = BASELINE,
                 bulk_baseline: str | None = None) -> None:
    """A ratio table against ``baseline``; the bulk column against ``bulk_baseline`` (default: the
    baseline itself), shown only when that one has a bulk API."""
    if baseline not in med:
        return
    base = med[baseline]
    bulk_name = bulk_baseline or baseline
    bulk = med.get(bulk_name)
    bulk_ok = bulk is not None and not bulk["bulk_is_single"]
    bulk_label = {"procrastinate": "batch_defer", "rq": "enqueue_many"}.get(bulk_name, bulk_name)
    bulk_head = (f"bulk enqueue (vs {bulk_label})" if bulk_name == baseline
                 else f"bulk enqueue (vs {bulk_name} {bulk_label})")
    print(f"\nRatios against {baseline} (x > 1: faster than {baseline}):")
    print(f"| system | single enqueue | {bulk_head} | process | process excl start-up | "
          "latency p50 (theirs/ours) |")
    print("|---|---|---|---|---|---|")
    for system in systems:
        if system.name == baseline:
            continue
        row = med[system.name]
        cells = [ratio(row["single"], base["single"]),
                 ratio(row["bulk"], bulk["bulk"]) if bulk_ok and bulk is not None else None,
                 ratio(row["process"], base["process"]), ratio(row["process_excl_startup"],
                                                                base["process_excl_startup"]),
                 ratio(base["lat_p50"], row["lat_p50"])]
        print(f"| {system.name} | " + " | ".join(f"{fmt(c, 2)}x" if c is not None else "-" for c in cells) + " |")


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "FAIL")


def times(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}x"


def targets(med: dict[str, dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(target, measured, PASS/FAIL/n/a) for issue #3's four targets (against Procrastinate)."""
    pg, base, off = med.get("oqron-postgres"), med.get(BASELINE), med.get("oqron-postgres-norec")
    out = []
    r = ratio(pg and pg["process"], base and base["process"])
    out.append(("postgres-mode processing >= 3x Procrastinate", f"{fmt(r, 2)}x", verdict(None if r is None
                                                                                          else r >= 3)))
    r = ratio(pg and pg["bulk"], base and base["bulk"])
    out.append(("add_bulk (postgres) >= 1.5x batch_defer", f"{fmt(r, 2)}x", verdict(None if r is None
                                                                                     else r >= 1.5)))
    p50 = pg and pg["lat_p50"]
    out.append(("latency p50 < 5 ms (postgres mode)", f"{fmt(p50, 1)} ms", verdict(None if p50 is None
                                                                                    else p50 < 5)))
    cost = None
    if pg and off and pg["process"] and off["process"]:
        cost = 1 - pg["process"] / off["process"]
    out.append(("run recording on vs off costs < 10% (postgres)",
                "-" if cost is None else f"{cost * 100:.1f}%", verdict(None if cost is None else cost < 0.10)))
    tasks, peer = med.get("django-tasks-oqron"), med.get("django-tasks")
    r = ratio(tasks and tasks["process"], pg and pg["process"])
    out.append(("django-tasks-oqron processing >= 0.8x oqron-postgres (issue #23)", f"{fmt(r, 2)}x",
                verdict(None if r is None else r >= 0.8)))
    r = ratio(tasks and tasks["process"], peer and peer["process"])
    out.append(("django-tasks-oqron processing vs django-tasks-db (info)", f"{fmt(r, 2)}x", "info"))
    return out


def redis_targets(med: dict[str, dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(target, measured, PASS/FAIL/n/a) for issue #5's targets (redis-postgres against the Redis peers)."""
    ours, rq = med.get("oqron-redis-postgres"), med.get("rq")
    out = []
    fastest = fastest_redis_peer(med)
    r = ratio(ours and ours["process"], med[fastest]["process"] if fastest else None)
    out.append(("redis-postgres processing >= 1.5x fastest Redis peer",
                times(r) + (f" (vs {fastest})" if fastest else ""), verdict(None if r is None else r >= 1.5)))
    r = ratio(ours and ours["bulk"], rq["bulk"] if rq and not rq["bulk_is_single"] else None)
    out.append(("add_bulk (redis-postgres) >= 1.5x RQ enqueue_many", times(r),
                verdict(None if r is None else r >= 1.5)))
    p50, p99 = ours and ours["lat_p50"], ours and ours["lat_p99"]
    out.append(("latency p50 < 5 ms (redis-postgres)", f"{fmt(p50, 1)} ms", verdict(None if p50 is None
                                                                                     else p50 < 5)))
    out.append(("latency p99 < 20 ms (redis-postgres)", f"{fmt(p99, 1)} ms", verdict(None if p99 is None
                                                                                      else p99 < 20)))
    two = med.get("oqron-redis-postgres@2")
    r = ratio(two and two["process"], ours and ours["process"])
    out.append(("--processes 2 >= 1.6x one process (redis-postgres)", times(r) + (
        f" ({fmt(two['process'])} vs {fmt(ours['process'])} jobs/s)" if r is not None and two and ours else ""),
                verdict(None if r is None else r >= 1.6)))
    return out


def scaling(med: dict[str, dict[str, Any]]) -> list[tuple[str, str, str]]:
    """Processing with N processes against one, for every oqron-<mode>@N measured with its
    one-process row (redis-postgres@2 is a target above; the rest are for information)."""
    out = []
    for name in med:
        base, _, count = name.partition("@")
        if count and base in med and name != "oqron-redis-postgres@2":
            r = ratio(med[name]["process"], med[base]["process"])
            out.append((f"{name} / {base} processing (p{count}/p1)", times(r), "info"))
    return out


def batching(med: dict[str, dict[str, Any]]) -> list[tuple[str, str, str]]:
    """Processing through a batch handler of BENCH_BATCH against the plain row of the same
    mode in the same run (issue 26), medians of the interleaved runs."""
    out = []
    for name in med:
        plain = name.replace("-batch", "")
        if name != plain and plain in med:
            r = ratio(med[name]["process"], med[plain]["process"])
            out.append((f"{name} / {plain} processing (batch of {BENCH_BATCH} / one per call)", times(r) + (
                f" ({fmt(med[name]['process'])} vs {fmt(med[plain]['process'])} jobs/s)" if r is not None else ""),
                        "info"))
    return out


def print_targets(med: dict[str, dict[str, Any]]) -> None:
    redis_run = any(n.startswith(("oqron-redis", *REDIS_PEERS)) for n in med)
    postgres_run = any(n in med for n in ("oqron-postgres", "oqron-postgres-norec", BASELINE)) or not redis_run
    groups = []
    if postgres_run:
        groups.append(("issue #3, against Procrastinate", targets(med)))
    if redis_run:
        groups.append(("issue #5, against the Redis peers", redis_targets(med)))
    extra = scaling(med)
    if extra:
        groups.append(("scaling with --processes", extra))
    batched = batching(med)
    if batched:
        groups.append(("batch handlers", batched))
    if redis_run:
        groups.append(("issue 36", issue36_targets(med, fastest_redis_peer(med))))
    width = max(len(name) for _, rows in groups for name, _, _ in rows)
    print("\nTargets:")
    for title, rows in groups:
        if len(groups) > 1:
            print(f"  {title}:")
        for name, measured, result in rows:
            print(f"  {result:4}  {name:{max(50, width)}} {measured}")


def print_problems(med: dict[str, dict[str, Any]]) -> bool:
    problems = [(n, e) for n, row in med.items() for e in row["errors"]]
    problems += [(n, c) for n, row in med.items() for c in row["runs_check"] if not c.startswith("ok")]
    for name, text in problems:
        print(f"  PROBLEM {name}: {text}")
    return bool(problems)


# -- main -------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=20_000, help="jobs for bulk enqueue and processing")
    parser.add_argument("--single-n", type=int, default=2_000, help="jobs for single enqueue")
    parser.add_argument("--latency-n", type=int, default=200)
    parser.add_argument("--latency-gap", type=float, default=0.02, help="seconds between latency jobs")
    parser.add_argument("--chunk", type=int, default=1_000, help="jobs per bulk call")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved runs per system; medians reported")
    parser.add_argument("--order", choices=("shuffled", "fixed"), default="shuffled",
                        help="the systems' order within each repetition: shuffled (seeded by --seed), so that "
                             "no system always runs right after the same other one, or as --systems lists them")
    parser.add_argument("--seed", type=int, default=0, help="seed of the shuffled order")
    parser.add_argument("--systems", default="postgres",
                        help=f"comma-separated names out of {', '.join(ALL_SYSTEMS)} (oqron-<mode>@N: N worker "
                             f"processes), or the groups postgres (the default: {', '.join(POSTGRES_SYSTEMS)}), "
                             f"redis ({', '.join(REDIS_SYSTEMS)}) and all")
    parser.add_argument("--quick", action="store_true", help="smoke run: N 2000, single 300, latency 50, repeat 1")
    parser.add_argument("--oqron-concurrency", type=int, default=None,
                        help="override our queue's concurrency (default: the Queue default, 5)")
    parser.add_argument("--oqron-processes", type=int, default=1,
                        help="our worker's --processes for the oqron-* names without @N (default 1)")
    parser.add_argument("--oqron-no-services", action="store_true",
                        help="diagnostics: our workers run without leader services (reconciler, rescuer, ...)")
    parser.add_argument("--no-analyze", dest="analyze", action="store_false",
                        help="skip ANALYZE between bulk enqueue and processing (planner statistics stay empty "
                             "after the reset's TRUNCATE)")
    parser.add_argument("--pg-url", default=os.environ.get("BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres"),
                        help="a maintenance database URL; the bench creates oqron_bench* databases next to it")
    parser.add_argument("--redis-url", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0"))
    parser.add_argument("--peers-python", default="python3.13", help="interpreter that creates bench/.peers-venv")
    parser.add_argument("--engine-env", choices=("runtime", "dev"), default="runtime",
                        help="where our workers and drivers run: runtime (the default) is bench/.oqron-venv, made "
                             "by the peers' interpreter with the engine's runtime requirements only, like the "
                             "peers' own virtualenv (bench/engine_venv.py); dev is this interpreter (.venv, with "
                             "the development requirements: redis-py then loads the OpenTelemetry SDK)")
    parser.add_argument("--stall-timeout", type=float, default=60.0,
                        help="fail a phase after this many seconds without progress")
    parser.add_argument("--stop-timeout", type=float, default=30.0, help="SIGTERM grace before SIGKILL")
    parser.add_argument("--lock-timeout", type=float, default=3600.0,
                        help="how long to wait for another throughput.py run on the same server to finish")
    parser.add_argument("--json", type=Path, default=None, help="also write every run's figures here")
    parser.add_argument("--against", default=None, metavar="REV",
                        help="also run every oqron-* system on revision REV (checked out into a temporary git "
                             "worktree; or a checkout's directory), named <system>~base, interleaved with this "
                             "checkout's, and print the A/B table this/base")
    parser.add_argument("--keep-logs", action="store_true", help="keep worker logs and SQLite files")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.single_n, args.latency_n, args.repeat = 2_000, 300, 50, 1
    if args.oqron_processes < 1:
        parser.error("--oqron-processes must be >= 1")
    names: list[str] = []
    for item in (s.strip() for s in args.systems.split(",") if s.strip()):
        for name in SYSTEM_GROUPS.get(item, (item,)):
            try:
                base, count = parse_system_name(name)
            except ValueError as exc:
                parser.error(str(exc))
            if base.removesuffix("-signal") not in ALL_SYSTEMS or (base.endswith("-signal")
                                                                    and not base.startswith("oqron-")):
                parser.error(f"unknown system {name!r}; choose from {', '.join(ALL_SYSTEMS)} (oqron-<mode>@N), "
                             f"or a group: {', '.join(SYSTEM_GROUPS)}")
            if count and not base.startswith("oqron-"):
                parser.error(f"{name}: @N (processes) applies to our engine's systems only")
            processes = 1
            if base.startswith("oqron-"):  # --oqron-processes: where the CLI worker runs (not -norec)
                processes = count or (1 if base.removesuffix("-signal").endswith("-norec") else args.oqron_processes)
            if processes != 1 and (base.removesuffix("-signal").endswith("-norec") or args.oqron_no_services):
                parser.error(f"{name}: several processes need the CLI worker (no -norec, no --oqron-no-services)")
            canonical = base if processes == 1 else f"{base}@{processes}"
            if canonical not in names:
                names.append(canonical)
    args.system_names = names
    return args


def interpreter(python: str) -> str:
    """Which virtualenv and Python version ``python`` is, for the report."""
    version = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True,
                             text=True, timeout=30).stdout.strip()
    return f"{Path(python).parent.parent.name}, Python {version}"


def engine_revision() -> str:
    """The commit the measured engine comes from, flagged when oqronkit/ has local changes."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "oqronkit"], cwd=ROOT, capture_output=True,
                               text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head or "unknown") + (" + uncommitted changes in oqronkit/" if dirty else "")


def measure(bench: Bench, systems: list[System]) -> dict[str, list[dict[str, Any]]]:
    """Every system ``--repeat`` times, interleaved; each run's figures."""
    results: dict[str, list[dict[str, Any]]] = {s.name: [] for s in systems}
    shuffle = random.Random(bench.args.seed).shuffle
    for rep in range(bench.args.repeat):
        # A system run right after another inherits its leftovers (dirty pages being
        # written back, autovacuum, a warm or cold cache); a fixed order would give each
        # system the same neighbour every time.
        order = list(systems)
        if bench.args.order == "shuffled":
            shuffle(order)
        for system in order:
            print(f"run {rep + 1}/{bench.args.repeat}: {system.name} ...", flush=True)
            began = time.monotonic()
            results[system.name].append(run_system(bench, system))
            shown = {k: (round(v, 2) if isinstance(v, float) else v)
                     for k, v in results[system.name][-1].items() if k not in ("errors", "notes")}
            print(f"  done in {time.monotonic() - began:.0f} s: {json.dumps(shown)}", flush=True)
    return results


def report(systems: list[System], results: dict[str, list[dict[str, Any]]], args: argparse.Namespace) -> bool:
    """Print the tables, ratios and targets; True when something went wrong."""
    med = summary(results)
    print_table(systems, med, args)
    print_load(med)
    print_ratios(systems, med)
    fastest = fastest_redis_peer(med)
    if fastest is not None:  # our Redis modes against the fastest Redis peer (bulk: against RQ)
        print_ratios(systems, med, fastest, bulk_baseline="rq" if "rq" in med else fastest)
    print_targets(med)
    failed = print_problems(med)
    if args.json is not None:
        args.json.write_text(json.dumps({"args": {k: v for k, v in vars(args).items() if k != "json"},
                                         "runs": results, "medians": med}, indent=1, default=str))
    return failed


def run(args: argparse.Namespace) -> int:
    scratch = Path(tempfile.mkdtemp(prefix="oqron-bench-"))
    bench = Bench(args.pg_url, args.redis_url, args, scratch)
    systems = build_systems(args.system_names, args.oqron_concurrency, services=not args.oqron_no_services)
    failed = True
    with contextlib.ExitStack() as stack:
        if args.against:
            base = stack.enter_context(other_checkout(args.against))
            systems += [s.on_checkout(base, "base") for s in systems if type(s) is OqronSystem]
            print(f"--against {describe(args.against)}: its checkout in {base}", flush=True)
        failed = run_systems(args, bench, systems, scratch)
    return 1 if failed else 0


def run_systems(args: argparse.Namespace, bench: Bench, systems: list[System], scratch: Path) -> bool:
    """Measure and report; True when something went wrong."""
    failed = True
    try:
        check_servers(bench)
        bench.take_lock(args.lock_timeout)
        ours = [s for s in systems if type(s) is OqronSystem]  # django-tasks-oqron needs Django: .venv
        if any(not isinstance(s, OqronSystem) for s in systems) or (ours and args.engine_env == "runtime"):
            ensure_peers_venv(args.peers_python)
        if ours and args.engine_env == "runtime":
            engine_python = ensure_engine_venv(str(PEERS_VENV / "bin" / "python"))
            for system in ours:
                system.python = engine_python
        for system in systems:
            system.prepare(bench)
        args.engine_revision = engine_revision()
        args.engine_python = interpreter(ours[0].python if ours else OUR_PYTHON)
        print(f"engine: {args.engine_revision}; our workers: {args.engine_python}", flush=True)
        results = measure(bench, systems)
        if engine_revision() != args.engine_revision:
            print(f"warning: the engine changed during the run (now {engine_revision()})", flush=True)
        failed = report(systems, results, args)
        if args.against:
            print_ab(results, args)
        return failed
    finally:
        with contextlib.suppress(Exception):
            bench.drop_databases()
        bench.release_lock()
        if args.keep_logs or failed:
            print(f"\nworker logs and scratch files: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sys.path.insert(0, str(PEERS))  # common.py: the Redis key names
    # SIGTERM to the harness unwinds like Ctrl-C, so every worker is stopped on the way out.
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
