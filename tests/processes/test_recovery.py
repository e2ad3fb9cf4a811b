"""How fast real worker processes resume after a Postgres or Redis restart, and that a
producer's ``add`` during the outage fails (or lands) within ``backend_wait``.

Every restart lands on a throwaway server (:mod:`tests.dedicated`). A probe thread
notes the moment the server accepts connections again; the first completion after it
is the earliest end of a run that started after that moment (it needed the restarted
server to be claimed or read). The target is 2 s.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
from collections.abc import Callable, Iterator

import psycopg
import pytest
import redis

from oqronkit import Engine, OqronConfig
from oqronkit.errors import BackendUnavailable
from oqronkit.live import live_workers
from tests.dedicated import DedicatedRedis, dedicated_postgres, dedicated_redis, wait_port
from tests.engine.queue.conftest import wait_until
from tests.processes.test_faults import (
    all_runs,
    by_job,
    completed_jobs,
    concurrent_runs,
    describe_repeats,
    fleet,
    left,
    producer,
)

pytestmark = pytest.mark.slow
#: The producer's backend_wait: an add during an outage must give up within it.
PRODUCER_WAIT_S = 1.0
#: Scheduling noise on a busy 2-core machine, on top of the wait.
ADD_SLACK_S = 1.0
RESUME_TARGET_S = 2.0
#: After a crash emptied the hot tables: the waiting jobs are signalled again at once
#: (backends/postgres/epoch.py, services/hot_reset.py), not at the reconciler's next pass.
CRASH_RESUME_TARGET_S = 1.0
JOBS = 1500


class PersistentRedis(DedicatedRedis):
    """A throwaway Redis that keeps its data across a restart (AOF, fsync always), as
    the durable plane of redis mode must; a restart then tests reconnection alone."""

    def start(self) -> None:
        subprocess.run(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes",
             "--appendfsync", "always", "--daemonize", "yes", "--dir", str(self.workdir),
             "--pidfile", str(self.workdir / "redis.pid"), "--logfile", str(self.workdir / "redis.log")],
            check=True, capture_output=True,
        )
        wait_port(self.port)


class Probe:
    """Notes (epoch ms) the first moment ``connect()`` succeeds, trying every 10 ms."""

    def __init__(self, connect: Callable[[], None]) -> None:
        self._connect = connect
        self.up_ms: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Probe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._connect()
            except Exception:
                self._stop.wait(0.01)
                continue
            self.up_ms = time.time() * 1000
            return

    def wait(self, timeout: float = 30.0) -> float:
        self._thread.join(timeout)
        assert self.up_ms is not None, "the server never came back"
        return self.up_ms


def postgres_probe(url: str) -> Probe:
    return Probe(lambda: psycopg.connect(url, connect_timeout=1).close())


def redis_probe(url: str) -> Probe:
    def ping() -> None:
        client = redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=0.5)
        try:
            client.ping()
        finally:
            client.close()

    return Probe(ping)


def registered_pids(engine: Engine) -> set[int]:
    """The pids of the workers in the hot plane's registry."""
    return {info["pid"] for info in live_workers(engine.hot)}


def timed_add(engine: Engine) -> tuple[float, Exception | None]:
    """One add; how long it took and what it raised."""
    started = time.monotonic()
    try:
        engine.get_queue("bulk").add({"ms": 1})
    except BackendUnavailable as exc:
        return time.monotonic() - started, exc
    return time.monotonic() - started, None


@contextlib.contextmanager
def run_around_an_outage(engine: Engine, tmp_path, *, stop: Callable[[], None], start: Callable[[], None],
                         probe: Probe, down_s: float) -> Iterator[dict]:
    """Add JOBS bulk jobs, run two workers, ``stop()`` the server mid-run, ``add`` once
    during the outage, ``start()`` it after ``down_s``, and wait for every job to finish.
    Yields the figures for the caller's verdicts."""
    figures: dict = {}
    with fleet(engine.config, tmp_path) as workers:
        pids = {workers.spawn().pid, workers.spawn().pid}
        # Both registered before the jobs exist: on a loaded machine one worker could
        # otherwise finish them all before the other has started.
        wait_until(lambda: registered_pids(engine) >= pids, timeout=60, interval=0.1)
        ids = {j.id for j in engine.get_queue("bulk").add_bulk([{"ms": 10, "i": i} for i in range(JOBS)])}
        # Both workers past their start (which needs both planes) before the outage.
        wait_until(lambda: {r["output"]["pid"] for r in all_runs(engine) if r["status"] == "completed"} == pids
                   and (left(engine) or JOBS) <= JOBS - 300, timeout=40, interval=0.1)
        stop()
        down_at = time.monotonic()
        figures["add_s"], figures["add_error"] = timed_add(engine)
        time.sleep(max(0.0, down_s - (time.monotonic() - down_at)))
        with probe:
            start()
            up_ms = probe.wait()
        try:
            wait_until(lambda: left(engine) == 0, timeout=60, interval=0.1)
            wait_until(lambda: completed_jobs(engine) >= ids, timeout=20, interval=0.2)
        except AssertionError:
            pytest.fail(f"{left(engine)} job(s) left, {len(ids - completed_jobs(engine))} without a completed "
                        f"run\n{workers.logs()}")
        drained_ms = time.time() * 1000
        assert all(p.poll() is None for p in workers.procs), workers.logs()
        runs = all_runs(engine)
        grouped = by_job(runs)
        after = [r for r in runs if r["status"] == "completed" and r["startedAt"] >= up_ms]
        figures.update(ids=ids, pids=pids, runs=runs, grouped=grouped, logs=workers.logs(),
                       resumed_s=(min(r["endedAt"] for r in after) - up_ms) / 1000 if after else None,
                       drained_s=(drained_ms - up_ms) / 1000, resumed_pids={r["output"]["pid"] for r in after})
        yield figures


def check_every_job_once_at_a_time(engine: Engine, figures: dict) -> None:
    grouped = figures["grouped"]
    assert set(grouped) >= figures["ids"]
    assert concurrent_runs(grouped) == [], f"{describe_repeats(grouped)}\n{figures['logs']}"
    assert completed_jobs(engine) >= figures["ids"]
    figures["dead"] = engine.durable.count("queue_dlq:bulk")
    # An outage never dead-letters a job: say which and why, with their runs.
    assert figures["dead"] == 0, describe_dead(engine, grouped)


def describe_dead(engine: Engine, grouped: dict[str, list[dict]]) -> str:
    dead = engine.durable.list("queue_dlq:bulk", limit=20).records
    def runs(job_id: str) -> list[tuple]:
        return [(run["status"], run.get("startedAt"), run.get("endedAt"), run.get("workerId"))
                for run in grouped.get(job_id, [])]

    return "\n".join(f"{r.id}: {r.value.get('errors')}\n  runs: {runs(r.id)}" for r in dead)


def check_resumed(figures: dict, what: str) -> None:
    resumed = figures["resumed_s"]
    assert resumed is not None and resumed < RESUME_TARGET_S, \
        f"{what}: first completion {resumed} s after the server was back\n{figures['logs']}"
    # Both workers (the same processes) took jobs again.
    assert figures["resumed_pids"] == figures["pids"], figures["logs"]


@pytest.mark.parametrize("mode", ["postgres", "redis-postgres"])
def test_processing_resumes_within_2_s_of_a_postgres_restart(tmp_path, scope_names, mode):
    with dedicated_postgres() as pg, dedicated_redis() as rd:
        config = OqronConfig(mode=mode, database_url=pg.url, project=scope_names[0],
                             redis_url=rd.url if mode == "redis-postgres" else None, backend_wait=PRODUCER_WAIT_S)
        with producer(config) as engine, run_around_an_outage(
                engine, tmp_path, stop=pg.stop, start=pg.start, probe=postgres_probe(pg.url), down_s=20.0) as figures:
            check_every_job_once_at_a_time(engine, figures)
            check_resumed(figures, f"{mode}, Postgres restart")
            # The durable plane was down: the add raised, within the producer's wait.
            assert isinstance(figures["add_error"], BackendUnavailable), figures["add_error"]
            assert "PostgreSQL" in str(figures["add_error"])
            assert figures["add_s"] < PRODUCER_WAIT_S + ADD_SLACK_S, figures["add_s"]
            print(f"\n{mode}, Postgres down 20 s: first completion {figures['resumed_s']:.2f} s after it accepted "
                  f"connections, drained {figures['drained_s']:.1f} s after; add raised after "
                  f"{figures['add_s']:.2f} s (backend_wait {PRODUCER_WAIT_S:g} s); {figures['dead']} dead-lettered")


@pytest.mark.parametrize("mode", ["redis", "redis-postgres"])
def test_processing_resumes_within_2_s_of_a_redis_restart(tmp_path, scope_names, pg_schema_url, mode):
    # A Redis that loses its data on restart is a FLUSHALL too: test_faults covers that.
    with dedicated_redis(PersistentRedis) as rd:
        config = OqronConfig(mode=mode, redis_url=rd.url, project=scope_names[0], backend_wait=PRODUCER_WAIT_S,
                             database_url=pg_schema_url if mode == "redis-postgres" else None)
        with producer(config) as engine, run_around_an_outage(
                engine, tmp_path, stop=rd.stop, start=rd.start, probe=redis_probe(rd.url), down_s=5.0) as figures:
            check_every_job_once_at_a_time(engine, figures)
            check_resumed(figures, f"{mode}, Redis restart")
            assert figures["add_s"] < PRODUCER_WAIT_S + ADD_SLACK_S, figures["add_s"]
            if mode == "redis":  # Redis is the durable plane: the add fails
                assert isinstance(figures["add_error"], BackendUnavailable), figures["add_error"]
                assert "Redis" in str(figures["add_error"])
            else:  # stored in Postgres; the reconciler signals it once Redis is back
                assert figures["add_error"] is None, figures["add_error"]
            print(f"\n{mode}, Redis down 5 s: first completion {figures['resumed_s']:.2f} s after it accepted "
                  f"connections, drained {figures['drained_s']:.1f} s after; add "
                  f"{'raised' if figures['add_error'] else 'returned'} after {figures['add_s']:.2f} s")


def test_a_postgres_crash_empties_the_hot_table_and_every_job_still_completes(tmp_path, scope_names):
    # An immediate shutdown is a crash to Postgres: on restart it resets the UNLOGGED
    # hot tables, so every signal, lease and lock is gone at once.
    with dedicated_postgres() as pg:
        config = OqronConfig(mode="postgres", database_url=pg.url, project=scope_names[0],
                             backend_wait=PRODUCER_WAIT_S)

        def crash() -> None:
            pg._pg_ctl("-m", "immediate", "stop")

        with producer(config) as engine, run_around_an_outage(
                engine, tmp_path, stop=crash, start=pg.start, probe=postgres_probe(pg.url), down_s=1.0) as figures:
            log = (pg.datadir / "server.log").read_text(errors="replace")
            assert "automatic recovery in progress" in log, log[-2000:]
            check_every_job_once_at_a_time(engine, figures)
            # Every job was added before the crash: the first completion is a pre-crash job's.
            assert figures["resumed_s"] is not None and figures["resumed_s"] < CRASH_RESUME_TARGET_S, \
                f"first completion {figures['resumed_s']} s after the server was back\n{figures['logs']}"
            twice = sum(1 for runs in figures["grouped"].values() if len(runs) > 1)
            print(f"\npostgres mode, crash (immediate stop, 1 s down): first completion "
                  f"{figures['resumed_s']:.2f} s after it accepted connections, every job done "
                  f"{figures['drained_s']:.1f} s after; {twice} job(s) ran more than once, none concurrently "
                  f"({len(figures['runs'])} runs)")
