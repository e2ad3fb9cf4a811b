"""Real worker processes (``python -m oqronkit worker --burst``, ``manage.py runworker
--burst``) given outcomes no durable plane stores as they are (issue 18, items 1-3): a
return value with a NUL, a lone surrogate or 5,000 levels of nesting, an exception whose
``__str__`` raises. Each poisoned job fails its attempt with the reason and is
dead-lettered (no retries: a burst worker does not wait for delayed jobs); every
ordinary job behind them completes with its run; the burst worker exits 0 (everything
it did is recorded)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from oqronkit import Engine, OqronConfig, Registry

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
POISONS = ["nul", "surrogate", "deep", "unprintable"]
ORDINARY = 60


@pytest.fixture(params=["sqlite", "postgres", "redis-postgres", "redis"])
def config(request, tmp_path, scope_names) -> OqronConfig:
    from tests.services import require_redis

    mode = request.param
    if mode == "sqlite":
        return OqronConfig(mode=mode, database_url=f"sqlite:///{tmp_path / 'oqron.sqlite3'}", project=scope_names[0])
    url = None if mode == "redis" else request.getfixturevalue("pg_schema_url")
    redis_url = require_redis() if mode.startswith("redis") else None
    return OqronConfig(mode=mode, database_url=url, redis_url=redis_url, project=scope_names[0])


@pytest.fixture
def producer(config):
    engine = Engine(config, registry=Registry())
    engine.queue("poison", retries=0)  # the job's attempts are set when it is added
    yield engine
    engine.close()
    if config.mode.startswith("redis"):
        from tests.services import drop_redis_project

        drop_redis_project(config.redis_url or "", config.project)


def env_for(config: OqronConfig) -> dict[str, str]:
    return {**os.environ, "OQRON_MODE": config.mode, "OQRON_DATABASE_URL": config.database_url or "",
            "OQRON_REDIS_URL": config.redis_url or "", "OQRON_PROJECT": config.project,
            "OQRON_ENVIRONMENT": config.environment, "PYTHONPATH": str(ROOT)}


def add_jobs(engine: Engine):
    q = engine.get_queue("poison")
    bad = {kind: q.add({"kind": kind}) for kind in POISONS}
    good = q.add_bulk([{"kind": "ordinary", "n": n} for n in range(ORDINARY)])
    return bad, good


def check(engine: Engine, bad, good, output: str) -> None:
    runs = [r.value for r in engine.durable.list("runs", limit=1000).records]
    statuses = Counter((r["jobId"], r["status"]) for r in runs)
    assert all(statuses[(job.id, "completed")] == 1 for job in good), output
    for kind, job in bad.items():
        assert statuses[(job.id, "failed")] == 1, (kind, output)
        dead = engine.durable.get("queue_dlq:poison", job.id).value
        assert dead["attempts"] == 1, (kind, output)
        expected = "<Unprintable whose str() raised RuntimeError>" if kind == "unprintable" else "cannot be stored"
        assert expected in dead["lastError"]["message"], (kind, dead["lastError"])
    assert engine.durable.count("queue_job:poison") == 0, output
    assert "Traceback" not in output, output  # no thread died


def test_a_burst_worker_settles_poisoned_outcomes_and_exits_0(producer, config):
    bad, good = add_jobs(producer)
    done = subprocess.run(
        [sys.executable, "-m", "oqronkit", "worker", "--import", "tests.processes.poison_app", "--burst",
         "--log-level", "warning", "--cpu-affinity", "off"],
        cwd=ROOT, env=env_for(config), capture_output=True, text=True, timeout=120,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    check(producer, bad, good, output)


def test_runworker_burst_settles_poisoned_outcomes_and_exits_0(producer, config):
    if config.mode == "redis":
        pytest.skip("runworker's Django settings need a SQL database; redis mode is covered by python -m oqronkit")
    bad, good = add_jobs(producer)
    done = subprocess.run(
        [sys.executable, "manage.py", "runworker", "--import", "tests.processes.poison_app", "--burst",
         "--log-level", "warning", "--cpu-affinity", "off"],
        cwd=ROOT, env={**env_for(config), "DJANGO_SETTINGS_MODULE": "oqronboard.settings"},
        capture_output=True, text=True, timeout=120,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    check(producer, bad, good, output)
