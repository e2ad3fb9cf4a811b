"""Real worker processes: SIGKILL mid-job, SIGTERM drain, --processes, --burst."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from oqronkit import Engine, OqronConfig, Registry
from tests.engine.queue.conftest import wait_until

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


# redis and postgres: the worker claims and reads its jobs in one call (claim_and_read)
@pytest.fixture(params=["sqlite", "postgres", "redis"])
def config(request, tmp_path, scope_names) -> OqronConfig:
    if request.param == "redis":
        from tests.services import require_redis

        return OqronConfig(mode="redis", database_url=None, redis_url=require_redis(), project=scope_names[0])
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'oqron.sqlite3'}"
    else:
        url = request.getfixturevalue("pg_schema_url")
    return OqronConfig(mode=request.param, database_url=url, project=scope_names[0])


@pytest.fixture
def producer(config):
    engine = Engine(config, registry=Registry())
    engine.queue("slow")
    engine.queue("quick")
    yield engine
    engine.close()
    if config.redis_url:
        from tests.services import drop_redis_project

        drop_redis_project(config.redis_url, config.project)


def spawn(config: OqronConfig, *args: str) -> subprocess.Popen:
    env = {**os.environ, "OQRON_MODE": config.mode, "OQRON_DATABASE_URL": config.database_url or "",
           "OQRON_REDIS_URL": config.redis_url or "",
           "OQRON_PROJECT": config.project, "OQRON_ENVIRONMENT": config.environment, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "oqronkit", "worker", "--import", "tests.processes.worker_app",
         "--log-level", "warning", *args],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )


def stop(proc: subprocess.Popen) -> str:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.stdout.read().decode(errors="replace") if proc.stdout else ""


def runs_for(engine: Engine, job_id: str) -> list[dict]:
    records = engine.durable.list("runs", order="started", limit=100).records
    return sorted((r.value for r in records if r.value.get("jobId") == job_id), key=lambda r: r["startedAt"])


def test_sigkill_mid_job_is_completed_by_another_worker(producer, config):
    job = producer.get_queue("slow").add({"seconds": 3})
    first = spawn(config)
    try:
        wait_until(lambda: (r := producer.durable.get("queue_job:slow", job.id)) and r.value["status"] == "active",
                   timeout=20)
        first_pid = first.pid
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        second = spawn(config)
        try:
            wait_until(lambda: producer.durable.get("queue_job:slow", job.id) is None, timeout=60)
            wait_until(lambda: any(r["status"] == "completed" for r in runs_for(producer, job.id)), timeout=10)
        finally:
            stop(second)
    finally:
        stop(first)
    runs = runs_for(producer, job.id)
    completed = [r for r in runs if r["status"] == "completed"]
    assert len(completed) == 1 and completed[0]["output"]["pid"] != first_pid
    assert len(runs) <= 2  # at most one extra attempt for one kill
    assert producer.durable.get("queue_dlq:slow", job.id) is None


def test_sigterm_drains_running_jobs_then_exits(producer, config):
    # Long enough that its active state is written (after 0.5 s of running) well before it ends.
    job = producer.get_queue("slow").add({"seconds": 2})
    proc = spawn(config)
    try:
        wait_until(lambda: (r := producer.durable.get("queue_job:slow", job.id)) and r.value["status"] == "active",
                   timeout=20)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        stop(proc)
    assert producer.durable.get("queue_job:slow", job.id) is None  # it finished during the drain
    assert [r["status"] for r in runs_for(producer, job.id)] == ["completed"]


def test_sigterm_with_a_job_longer_than_the_drain_returns_it_uncounted(producer, config):
    job = producer.get_queue("slow").add({"seconds": 60})
    proc = spawn(config, "--drain-timeout", "0.5")
    try:
        wait_until(lambda: (r := producer.durable.get("queue_job:slow", job.id)) and r.value["status"] == "active",
                   timeout=20)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        stop(proc)
    stored = producer.durable.get("queue_job:slow", job.id).value
    assert stored["status"] == "waiting" and stored["attempts"] == 0


def test_processes_share_the_work_and_burst_exits(producer, config):
    producer.get_queue("quick").add_bulk([{"i": i} for i in range(300)])
    proc = spawn(config, "--processes", "2", "--burst")
    try:
        assert proc.wait(90) == 0
    finally:
        output = stop(proc)
    assert producer.durable.count("queue_job:quick") == 0, output
    runs = [r.value for r in producer.durable.list("runs", limit=1000).records]
    assert len(runs) == 300 and all(r["status"] == "completed" for r in runs)
