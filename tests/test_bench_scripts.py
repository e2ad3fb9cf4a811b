"""The benchmark scripts are no part of the pass/fail suite, but they must still start:
a refactor once left bench/peers/oqron_worker.py importing a name that had moved."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = [
    *sorted(p.relative_to(ROOT) for p in (ROOT / "bench").glob("*.py")),
    Path("bench/peers/oqron_worker.py"), Path("bench/peers/oqron_driver.py"),
    Path("bench/peers/pubsub_driver.py"), Path("bench/peers/streams_consumer.py"),
]


@pytest.mark.parametrize("script", SCRIPTS, ids=str)
def test_benchmark_script_imports_and_parses_its_options(script: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "bench" / "peers"), str(ROOT)])}
    done = subprocess.run([sys.executable, str(ROOT / script), "--help"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout
