"""``--log-format json`` and ``--metrics-port`` on both worker commands: every line the
worker prints is one JSON object with its time, level, logger, message and action."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.processes.test_worker_options import COMMANDS

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("command", COMMANDS, ids=list(COMMANDS))
def test_every_line_is_a_json_object(command: str, tmp_path):
    env = {**os.environ, "OQRON_MODE": "sqlite", "OQRON_DATABASE_URL": f"sqlite:///{tmp_path / 'o.sqlite3'}",
           "DJANGO_SETTINGS_MODULE": "oqronboard.settings", "OQRON_CPU_AFFINITY": "off"}
    done = subprocess.run([*COMMANDS[command], "--burst", "--import", "tests.processes.worker_app",
                           "--log-format", "json", "--metrics-port", "0"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (done.stdout, done.stderr)
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]  # raises on any line that is not JSON
    assert all({"ts", "level", "logger", "message"} <= set(r) for r in records), records
    actions = {r.get("action") for r in records}
    assert {"worker.banner", "worker.metrics_serving", "worker.start", "worker.stop"} <= actions, actions
    started = next(r for r in records if r.get("action") == "worker.start")
    assert started["level"] == "INFO" and started["logger"] == "oqronkit.worker.process"
    assert started["ts"].endswith("Z") and "T" in started["ts"]
