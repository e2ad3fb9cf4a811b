"""``python manage.py runworker``: the Django entry point, with real processes."""

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


@pytest.fixture
def config(tmp_path, scope_names) -> OqronConfig:
    return OqronConfig(mode="sqlite", database_url=f"sqlite:///{tmp_path / 'oqron.sqlite3'}", project=scope_names[0])


def runworker(config: OqronConfig, *args: str) -> subprocess.Popen:
    env = {**os.environ, "OQRON_MODE": config.mode, "OQRON_DATABASE_URL": config.database_url or "",
           "OQRON_PROJECT": config.project, "DJANGO_SETTINGS_MODULE": "oqronboard.settings"}
    return subprocess.Popen(
        [sys.executable, "manage.py", "runworker", "--import", "tests.processes.worker_app", "--log-level",
         "warning", *args],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )


def test_banner_and_burst(config):
    engine = Engine(config, registry=Registry())
    try:
        engine.queue("quick").add_bulk([{"i": i} for i in range(20)])
        proc = runworker(config, "--burst", "--queues", "quick")
        out, _ = proc.communicate(timeout=60)
        text = out.decode()
        assert proc.returncode == 0, text
        assert "mode:        sqlite" in text and "quick (concurrency 10)" in text
        assert engine.durable.count("queue_job:quick") == 0
    finally:
        engine.close()


def test_sigkill_a_runworker_mid_job_and_another_completes_it(config):
    engine = Engine(config, registry=Registry())
    try:
        job = engine.queue("slow").add({"seconds": 3})
        first = runworker(config)
        wait_until(lambda: (r := engine.durable.get("queue_job:slow", job.id)) and r.value["status"] == "active",
                   timeout=30)
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        second = runworker(config)
        try:
            wait_until(lambda: engine.durable.get("queue_job:slow", job.id) is None, timeout=60)
        finally:
            second.send_signal(signal.SIGTERM)
            second.wait(30)
        runs = [r.value for r in engine.durable.list("runs", limit=10).records if r.value.get("jobId") == job.id]
        assert sorted(r["status"] for r in runs) == ["completed", "failed"]
    finally:
        engine.close()


def test_memory_mode_is_refused_with_a_reason(config):
    env = {**os.environ, "OQRON_MODE": "memory", "DJANGO_SETTINGS_MODULE": "oqronboard.settings"}
    done = subprocess.run([sys.executable, "manage.py", "runworker", "--burst"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "memory" in done.stderr
