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


def test_capacity_model_picks_the_binding_resource() -> None:
    """bench/capacity.py's arithmetic (no servers): the ceiling is the smallest of the
    three bounds, and on a shared machine the prediction is free cores / summed CPU."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import capacity
    finally:
        sys.path.remove(str(ROOT / "bench"))
    costs = {"worker_us": 100.0, "pg_us": 60.0, "pg_aux_us": 0.0, "redis_us": 20.0, "redis_main_us": 20.0}
    assert capacity.ceiling(costs, "postgres", 1, 2, 2.0) == pytest.approx((20_000, "workers"))
    assert capacity.ceiling(costs, "postgres", 4, 2, 2.0) == (pytest.approx(2 / 60e-6), "postgres")
    assert capacity.ceiling(costs, "redis-postgres", 16, 2, 8.0) == (pytest.approx(50_000), "redis")
    value, binding = capacity.predict(costs, other_cores=0.2, processes=2, ncpu=2)
    assert (value, binding) == (pytest.approx(1.8 / 180e-6), "shared CPU")
    assert capacity.predict(costs, other_cores=0.0, processes=1, ncpu=2)[1] == "1 worker process"
