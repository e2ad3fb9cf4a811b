"""Fault tests with real worker processes in ``redis-postgres`` mode (and one in ``postgres``).

Every fault lands on a throwaway server (:mod:`tests.dedicated`): SIGKILL a worker
mid-job, FLUSHALL in the middle of a 5,000-job run, a Redis restart and a 10 s
Postgres outage. The verdicts come from the durable run records: every job completed,
at most the expected extra attempts, and no job ever ran twice at the same time.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from oqronkit import Engine, OqronConfig, Registry
from oqronkit.errors import OqronError
from tests.dedicated import dedicated_postgres, dedicated_redis
from tests.engine.queue.conftest import wait_until

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def make_config(database_url: str, redis_url: str, project: str) -> OqronConfig:
    return OqronConfig(mode="redis-postgres", database_url=database_url, redis_url=redis_url, project=project)


@contextlib.contextmanager
def producer(config: OqronConfig) -> Iterator[Engine]:
    """An engine that adds the jobs and reads the run records (it runs no handler)."""
    engine = Engine(config, registry=Registry())
    engine.queue("long")
    engine.queue("bulk")
    try:
        yield engine
    finally:
        engine.close()


class Fleet:
    """Worker processes (``python -m oqronkit worker``), each logging to its own file."""

    def __init__(self, config: OqronConfig, logdir: Path, app: str = "tests.processes.fault_app") -> None:
        self.config = config
        self.logdir = logdir
        self.app = app
        self.procs: list[subprocess.Popen] = []

    def spawn(self) -> subprocess.Popen:
        env = {**os.environ, "OQRON_MODE": self.config.mode, "OQRON_DATABASE_URL": self.config.database_url or "",
               "OQRON_REDIS_URL": self.config.redis_url or "", "OQRON_PROJECT": self.config.project,
               "OQRON_ENVIRONMENT": self.config.environment, "PYTHONPATH": str(ROOT)}
        # A file, not a pipe: a worker logging a burst of warnings must never block on a full pipe.
        log = open(self.logdir / f"worker-{len(self.procs)}.log", "wb")  # noqa: SIM115 - closed with the fleet
        proc = subprocess.Popen(
            [sys.executable, "-m", "oqronkit", "worker", "--import", self.app,
             "--log-level", "warning", "--drain-timeout", "2"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
        proc.log = log  # type: ignore[attr-defined]
        self.procs.append(proc)
        return proc

    def logs(self) -> str:
        return "\n".join(f"--- worker {i} (pid {p.pid}) ---\n" + (self.logdir / f"worker-{i}.log").read_text(
            errors="replace")[-4000:] for i, p in enumerate(self.procs))

    def stop(self) -> None:
        """SIGTERM every worker still alive, SIGKILL whichever does not exit in time."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.log.close()  # type: ignore[attr-defined]


@contextlib.contextmanager
def fleet(config: OqronConfig, logdir: Path, size: int = 0, app: str = "tests.processes.fault_app") -> Iterator[Fleet]:
    workers = Fleet(config, logdir, app)
    try:
        for _ in range(size):
            workers.spawn()
        yield workers
    finally:
        workers.stop()


def all_runs(engine: Engine) -> list[dict]:
    """Every run record in the durable plane, paged."""
    runs, cursor = [], None
    while True:
        page = engine.durable.list("runs", limit=1000, cursor=cursor)
        runs += [r.value for r in page.records]
        if page.next_cursor is None:
            return runs
        cursor = page.next_cursor


def by_job(runs: list[dict]) -> dict[str, list[dict]]:
    grouped: dict[str, list[dict]] = defaultdict(list)
    for run in runs:
        grouped[run["jobId"]].append(run)
    for group in grouped.values():
        group.sort(key=lambda r: r["startedAt"])
    return grouped


def concurrent_runs(grouped: dict[str, list[dict]]) -> list[str]:
    """Jobs two of whose runs overlap in time ([startedAt, endedAt] intersect)."""
    bad = []
    for job_id, runs in grouped.items():
        for earlier, later in itertools.pairwise(runs):
            if earlier.get("endedAt") is None or earlier["endedAt"] > later["startedAt"]:
                bad.append(job_id)
                break
    return bad


def left(engine: Engine) -> int | None:
    """Bulk jobs still in the durable plane; None while the producer's own connection
    fails (its pooled connections die with a Postgres restart, like the workers')."""
    try:
        return engine.durable.count("queue_job:bulk")
    except OqronError:
        return None


def describe_repeats(grouped: dict[str, list[dict]], limit: int = 5) -> str:
    """The runs of a few jobs that ran more than once, for failure messages."""
    lines = []
    for job_id, runs in [(j, r) for j, r in grouped.items() if len(r) > 1][:limit]:
        lines.append(f"job {job_id}:")
        lines += [f"  {r['workerId']} attempt {r.get('attempts')} {r['status']} {r['startedAt']}..{r.get('endedAt')} "
                  f"{[t['reason'] for t in r.get('timeline', [])]}" for r in runs]
    return "\n".join(lines)


def completed_jobs(engine: Engine) -> set[str]:
    return {r["jobId"] for r in all_runs(engine) if r["status"] == "completed"}


def test_sigkill_a_worker_mid_job_and_another_completes_it(tmp_path, scope_names, pg_schema_url):
    with dedicated_redis() as redis_server, producer(make_config(pg_schema_url, redis_server.url,
                                                                 scope_names[0])) as engine:
        with fleet(engine.config, tmp_path) as workers:
            job = engine.get_queue("long").add({"seconds": 3})
            first = workers.spawn()
            wait_until(lambda: (r := engine.durable.get("queue_job:long", job.id)) and r.value["status"] == "active",
                       timeout=30)
            second = workers.spawn()
            time.sleep(1.0)  # the second worker is up and polling before the first dies
            first.send_signal(signal.SIGKILL)
            first.wait(10)
            killed_at = time.monotonic()
            wait_until(lambda: engine.durable.get("queue_job:long", job.id) is None, timeout=30)
            recovered = time.monotonic() - killed_at
            wait_until(lambda: job.id in completed_jobs(engine), timeout=10)
            runs = by_job(all_runs(engine))[job.id]
            assert second.poll() is None, workers.logs()
        completed = [r for r in runs if r["status"] == "completed"]
        assert len(completed) == 1 and completed[0]["output"]["pid"] == second.pid, (runs, workers.logs())
        assert len(runs) <= 2, runs  # at most one extra attempt for one kill
        assert not concurrent_runs({job.id: runs})
        assert engine.durable.get("queue_dlq:long", job.id) is None
        print(f"\nSIGKILL: job finished {recovered:.1f} s after the kill (3 s job, 1.5 s lease); runs: "
              f"{[r['status'] for r in runs]}")


def run_through_a_fault(engine: Engine, workers: Fleet, jobs: int, ms: int, fault_at: int, fault) -> dict:
    """Add ``jobs`` bulk jobs, start two workers, call ``fault()`` once ``fault_at`` jobs
    have left the durable plane, then wait for all of them to finish. Returns figures."""
    ids = {j.id for j in engine.get_queue("bulk").add_bulk([{"ms": ms, "i": i} for i in range(jobs)])}
    assert len(ids) == jobs
    pids = {workers.spawn().pid, workers.spawn().pid}
    started = time.monotonic()
    wait_until(lambda: (n := left(engine)) is not None and n <= jobs - fault_at, timeout=40, interval=0.05)
    fault_started = time.monotonic()
    left_at_fault = left(engine)
    fault()
    fault_done = time.monotonic()
    try:
        wait_until(lambda: left(engine) == 0, timeout=45, interval=0.1)
        drained = time.monotonic()
        wait_until(lambda: completed_jobs(engine) >= ids, timeout=20, interval=0.2)
    except AssertionError:
        pytest.fail(f"{left(engine)} job(s) left, {len(ids - completed_jobs(engine))} without a completed run "
                    f"({engine.durable.count('queue_dlq:bulk')} dead-lettered)\n{workers.logs()}")
    assert all(p.poll() is None for p in workers.procs), workers.logs()  # nobody restarted a worker
    runs = all_runs(engine)
    grouped = by_job(runs)
    return {
        "ids": ids, "runs": runs, "grouped": grouped, "pids": pids, "left_at_fault": left_at_fault,
        "fault_s": fault_done - fault_started, "before_fault_s": fault_started - started,
        "after_fault_s": drained - fault_done,
    }


def test_flushall_mid_run_loses_nothing_and_never_runs_a_job_twice_at_once(tmp_path, scope_names, pg_schema_url):
    jobs = 5000
    with dedicated_redis() as redis_server, producer(make_config(pg_schema_url, redis_server.url,
                                                                 scope_names[0])) as engine:
        with fleet(engine.config, tmp_path) as workers:
            figures = run_through_a_fault(engine, workers, jobs, ms=5, fault_at=1500, fault=redis_server.flushall)
        grouped = figures["grouped"]
        assert set(grouped) == figures["ids"]
        assert concurrent_runs(grouped) == [], workers.logs()
        completed = [r for r in figures["runs"] if r["status"] == "completed"]
        assert {r["jobId"] for r in completed} == set(grouped)
        assert engine.durable.count("queue_dlq:bulk") == 0
        twice = sum(1 for runs in grouped.values() if len(runs) > 1)
        print(f"\nFLUSHALL with {figures['left_at_fault']} of {jobs} jobs left: {twice} job(s) ran more than "
              f"once ({len(figures['runs'])} runs, {len(completed)} completed), none concurrently; drained "
              f"{figures['after_fault_s']:.1f} s after the flush")


def test_redis_restart_mid_run_and_the_workers_resume_by_themselves(tmp_path, scope_names, pg_schema_url):
    jobs = 2000
    with dedicated_redis() as redis_server, producer(make_config(pg_schema_url, redis_server.url,
                                                                 scope_names[0])) as engine:
        marks: dict[str, float] = {}

        def restart() -> None:
            redis_server.stop()
            time.sleep(2.0)
            redis_server.start()
            marks["up"] = time.time() * 1000

        with fleet(engine.config, tmp_path) as workers:
            figures = run_through_a_fault(engine, workers, jobs, ms=10, fault_at=500, fault=restart)
        grouped = figures["grouped"]
        assert len(grouped) == jobs and concurrent_runs(grouped) == [], workers.logs()
        after = [r for r in figures["runs"] if r["status"] == "completed" and r["startedAt"] >= marks["up"]]
        # Both workers (the same processes) claimed jobs again after Redis came back.
        assert {r["output"]["pid"] for r in after} == figures["pids"], workers.logs()
        first_after = min(r["startedAt"] for r in after) - marks["up"]
        twice = sum(1 for runs in grouped.values() if len(runs) > 1)
        print(f"\nRedis restart (2 s down) with {figures['left_at_fault']} of {jobs} jobs left: first job "
              f"started {first_after / 1000:.1f} s after Redis was back, drained {figures['after_fault_s']:.1f} s "
              f"after; {twice} job(s) ran more than once, none concurrently")


def test_postgres_down_for_10_s_mid_run_and_every_run_record_arrives(tmp_path, scope_names):
    jobs = 2000
    with dedicated_postgres() as pg_server, dedicated_redis() as redis_server, \
            producer(make_config(pg_server.url, redis_server.url, scope_names[0])) as engine:
        marks: dict[str, float] = {}

        def outage() -> None:
            pg_server.stop()
            time.sleep(10.0)
            pg_server.start()
            marks["up"] = time.time() * 1000

        with fleet(engine.config, tmp_path) as workers:
            figures = run_through_a_fault(engine, workers, jobs, ms=10, fault_at=500, fault=outage)
        grouped = figures["grouped"]
        completed = [r for r in figures["runs"] if r["status"] == "completed"]
        assert len(grouped) == jobs and concurrent_runs(grouped) == [], workers.logs()
        assert len(completed) == jobs, f"{len(completed)} completed runs for {jobs} jobs\n{describe_repeats(grouped)}"
        assert engine.durable.count("queue_dlq:bulk") == 0
        after = [r for r in completed if r["startedAt"] >= marks["up"]]
        assert {r["output"]["pid"] for r in after} == figures["pids"], workers.logs()
        print(f"\nPostgres down 10 s with {figures['left_at_fault']} of {jobs} jobs left: drained "
              f"{figures['after_fault_s']:.1f} s after it was back; {len(figures['runs'])} runs, "
              f"{len(completed)} completed")


def test_postgres_down_for_10_s_in_postgres_mode_and_every_job_completes(tmp_path, scope_names):
    # Both planes are the database that goes away: completions settled in one transaction
    # fail, fall back to the steps, are held, and land once it is back; leases lapse
    # meanwhile (3 s) and are renewed by their live holders before the leader may count a
    # stall (a lease period after it is back): never two attempts at once, never a dead
    # letter (issue 19 saw 16 under load).
    jobs = 2000
    with dedicated_postgres() as pg_server, producer(OqronConfig(
            mode="postgres", database_url=pg_server.url, project=scope_names[0])) as engine:
        def outage() -> None:
            pg_server.stop()
            time.sleep(10.0)
            pg_server.start()

        with fleet(engine.config, tmp_path) as workers:
            figures = run_through_a_fault(engine, workers, jobs, ms=10, fault_at=500, fault=outage)
        grouped = figures["grouped"]
        assert set(grouped) == figures["ids"]
        assert concurrent_runs(grouped) == [], f"{describe_repeats(grouped)}\n{workers.logs()}"
        completed = [r for r in figures["runs"] if r["status"] == "completed"]
        assert {r["jobId"] for r in completed} == figures["ids"]
        dead = engine.durable.list("queue_dlq:bulk", limit=20).records
        assert not dead, "\n".join(f"{r.id}: {r.value.get('errors')}" for r in dead)
        twice = sum(1 for runs in grouped.values() if len(runs) > 1)
        print(f"\nPostgres down 10 s in postgres mode with {figures['left_at_fault']} of {jobs} jobs left: drained "
              f"{figures['after_fault_s']:.1f} s after it was back; {twice} job(s) ran more than once, none "
              f"concurrently ({len(figures['runs'])} runs, {len(completed)} completed)")
