"""A batch worker SIGKILLed mid-batch loses nothing: the leases of its batch (and of
the batch it held) lapse, the rescuer returns the jobs, and another worker completes
each of them once. Every mode with a plane another process can reach (memory mode's
planes live inside one process). SIGTERM mid-batch gives every job back uncounted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from oqronkit import Batch, Engine
from tests.engine.queue.conftest import built_engine, fast_services, running, wait_until

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["sqlite", "postgres", "redis-postgres", "redis"])
def engine(request, tmp_path, scope_names):
    with built_engine(request.param, request, tmp_path, scope_names[0]) as eng:
        yield eng


def spawn(engine: Engine, *args: str) -> subprocess.Popen:
    config = engine.config
    env = {**os.environ, "OQRON_MODE": config.mode, "OQRON_DATABASE_URL": config.database_url or "",
           "OQRON_REDIS_URL": config.redis_url or "", "OQRON_PROJECT": config.project,
           "OQRON_ENVIRONMENT": config.environment, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "oqronkit", "worker", "--import", "tests.processes.batch_app", "--log-level", "error",
         *args],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


def test_sigkill_mid_batch_loses_nothing(engine: Engine):
    queue = engine.queue("kbatch", lease=1.0, backoff=0.05, retries=3, batch=Batch(size=5, max_wait=0.1),
                         handler=lambda jobs: [{"pid": os.getpid()} for _ in jobs])
    engine.queue("idle", handler=lambda ctx: None)
    ids = [j.id for j in queue.add_bulk([{"seconds": 30}] * 10)]
    # The leader lives here, so the victim never holds the leader lock (10 s) when it dies.
    with running(engine, queues=["idle"]) as leader:
        fast_services(leader)
        wait_until(lambda: leader.services is not None and leader.services.is_leader, timeout=5)
        victim = spawn(engine)
        try:
            def batch_running():
                """a batch of the victim ran for 0.5 s (its jobs' active state is written)"""
                rows = [engine.durable.get("queue_job:kbatch", i) for i in ids]
                return sum(1 for r in rows if r and r.value["status"] == "active") == 5

            wait_until(batch_running, timeout=20)
            victim.send_signal(signal.SIGKILL)
            victim.wait(10)
        finally:
            if victim.poll() is None:
                victim.kill()
                victim.wait()
        with running(engine, queues=["kbatch"], services=False):
            wait_until(lambda: engine.durable.count("queue_job:kbatch") == 0, timeout=15)
    wait_until(lambda: sum(1 for r in engine.durable.list("runs", limit=100).records
                           if r.value["status"] == "completed") == 10, timeout=5)
    runs = [r.value for r in engine.durable.list("runs", limit=100).records]
    completed = [r for r in runs if r["status"] == "completed"]
    assert sorted(r["jobId"] for r in completed) == sorted(ids)  # each job completed once
    assert all(r["output"]["pid"] == os.getpid() for r in completed)
    assert engine.durable.count("queue_dlq:kbatch") == 0
    # The killed batch's jobs were counted a stalled attempt; the held batch's too.
    assert {r["attempts"] for r in completed} == {2}


@pytest.mark.parametrize("engine", ["postgres"], indirect=True)
def test_sigterm_mid_batch_returns_every_job_uncounted(engine: Engine):
    queue = engine.queue("kbatch")
    ids = [j.id for j in queue.add_bulk([{"seconds": 30}] * 10)]
    proc = spawn(engine, "--drain-timeout", "0.5")
    try:
        def batch_running():
            """a batch ran for 0.5 s (its jobs' active state is written)"""
            rows = [engine.durable.get("queue_job:kbatch", i) for i in ids]
            return sum(1 for r in rows if r and r.value["status"] == "active") == 5

        wait_until(batch_running, timeout=20)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # The running batch was interrupted at the drain deadline, the filling one given back:
    # all ten wait again with no attempt counted.
    stored = [engine.durable.get("queue_job:kbatch", i).value for i in ids]
    assert all(s["status"] == "waiting" and s["attempts"] == 0 for s in stored)
