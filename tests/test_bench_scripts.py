"""The benchmark scripts are no part of the pass/fail suite, but they must still start:
a refactor once left bench/peers/oqron_worker.py importing a name that had moved."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = [
    # helper modules of the scripts (no __main__) are imported by the script that uses them
    *sorted(p.relative_to(ROOT) for p in (ROOT / "bench").glob("*.py") if '__name__ == "__main__"' in p.read_text()),
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


def _capacity_model() -> ModuleType:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import capacity_model
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return capacity_model


def test_capacity_model_picks_the_binding_resource() -> None:
    """bench/capacity.py's arithmetic (no servers): the ceiling is the smallest of the
    three bounds, and on a shared machine the prediction is free cores / summed CPU."""
    capacity = _capacity_model()
    costs = {"worker_us": 100.0, "pg_us": 60.0, "pg_aux_us": 0.0, "redis_us": 20.0, "redis_main_us": 20.0}
    assert capacity.ceiling(costs, "postgres", 1, 2, 2.0) == pytest.approx((20_000, "workers"))
    assert capacity.ceiling(costs, "postgres", 4, 2, 2.0) == (pytest.approx(2 / 60e-6), "postgres")
    assert capacity.ceiling(costs, "redis-postgres", 16, 2, 8.0) == (pytest.approx(50_000), "redis")
    value, binding = capacity.predict(costs, other_cores=0.2, processes=2, ncpu=2)
    assert (value, binding) == (pytest.approx(1.8 / 180e-6), "shared CPU")
    assert capacity.predict(costs, other_cores=0.0, processes=1, ncpu=2)[1] == "1 worker process"


def test_capacity_machine_factor_scales_each_tier_by_its_own_ratio() -> None:
    """The machine factor is the median of per-repetition ratios (not a ratio of medians),
    and each cost is scaled by its tier's factor: Postgres's aux by Postgres's."""
    model = _capacity_model()
    unit = {"client_us": 100.0, "pg_us": 50.0, "redis_us": 20.0, "redis_main_us": 20.0}
    reps = [{1: unit, 2: {**unit, "client_us": 110.0, "pg_us": 50.0, "redis_us": 30.0, "redis_main_us": 30.0}},
            {1: {**unit, "client_us": 200.0}, 2: {**unit, "client_us": 260.0}},
            {1: unit, 2: {**unit, "client_us": 120.0, "pg_us": 60.0}}]
    factors = model.machine_factors(reps, 2)
    assert factors["client_us"] == pytest.approx(1.2)  # ratios 1.1, 1.3, 1.2
    assert factors["pg_us"] == pytest.approx(1.0)  # ratios 1.0, 1.0, 1.2
    assert model.machine_factors(reps, 3) is None
    costs = {"worker_us": 100.0, "pg_us": 60.0, "pg_aux_us": 10.0, "redis_us": 20.0, "redis_main_us": 10.0}
    scaled = model.scaled(costs, {**factors, "redis_us": 1.5, "redis_main_us": 2.0})
    assert scaled == pytest.approx({"worker_us": 120.0, "pg_us": 60.0, "pg_aux_us": 10.0, "redis_us": 30.0,
                                    "redis_main_us": 20.0})


def test_capacity_busy_factor_pairs_runs_of_the_same_repetition() -> None:
    model = _capacity_model()
    keys = ("worker_us", "pg_us", "pg_aux_us", "redis_us", "redis_main_us")
    p1 = [{"rep": 0, **dict.fromkeys(keys, 100.0)}, {"rep": 1, **dict.fromkeys(keys, 200.0)}]
    busy = [{"rep": 1, **dict.fromkeys(keys, 220.0)}, {"rep": 0, **dict.fromkeys(keys, 130.0)},
            {"rep": 7, **dict.fromkeys(keys, 999.0)}]  # no 1-process run in its repetition: ignored
    factors = model.busy_factors(p1, busy)
    assert factors is not None
    assert factors["worker_us"] == pytest.approx(1.2)  # ratios 1.1 and 1.3
