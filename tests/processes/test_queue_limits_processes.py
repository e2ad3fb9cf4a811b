"""Cluster-wide queue limits (issue 22) across two real worker processes: never more
than ``global_concurrency`` handlers at once, never more than ``rate_limit[0]`` starts in
any window, and nothing lost, retried, stalled or dead-lettered because of a limit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from oqronkit import Engine, OqronConfig, Registry
from oqronkit.live import live_workers
from tests.engine.queue.conftest import wait_until

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
CAPPED, PACED = 12, 12
#: Run starts follow their claim by the durable read (milliseconds): the window checked
#: on run start times is this much shorter than the claim window the plane enforces.
START_SLACK_S = 0.1


@pytest.fixture(params=["postgres", "redis-postgres", "redis", "sqlite"])
def config(request, scope_names, tmp_path) -> OqronConfig:
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
    engine.queue("capped")
    engine.queue("paced")
    yield engine
    engine.close()
    if config.mode.startswith("redis"):
        from tests.services import drop_redis_project

        drop_redis_project(config.redis_url or "", config.project)


def spawn(config: OqronConfig) -> subprocess.Popen:
    env = {**os.environ, "OQRON_MODE": config.mode, "OQRON_DATABASE_URL": config.database_url or "",
           "OQRON_REDIS_URL": config.redis_url or "", "OQRON_PROJECT": config.project,
           "OQRON_ENVIRONMENT": config.environment, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "oqronkit", "worker", "--import", "tests.processes.limits_app",
         "--log-level", "warning", "--cpu-affinity", "off"],
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


def most_at_once(spans: list[tuple[float, float]]) -> int:
    events = sorted([(enter, 1) for enter, _ in spans] + [(leave, -1) for _, leave in spans])
    peak = now = 0
    for _, step in events:  # a leave sorts before an enter at the same instant
        now += step
        peak = max(peak, now)
    return peak


def most_in_window(starts: list[float], window: float) -> int:
    starts = sorted(starts)
    return max(sum(1 for t in starts[i:] if t - first < window) for i, first in enumerate(starts))


def test_two_workers_hold_the_cluster_wide_limits(producer, config):
    workers = [spawn(config), spawn(config)]
    outputs = []
    try:
        # Both consume before the jobs come, so both take part.
        wait_until(lambda: len(live_workers(producer.hot)) == 2, timeout=30)
        capped = producer.get_queue("capped").add_bulk([{"i": i} for i in range(CAPPED)])
        paced = producer.get_queue("paced").add_bulk([{"i": i} for i in range(PACED)])
        wait_until(lambda: producer.durable.count("queue_job:capped") == 0
                   and producer.durable.count("queue_job:paced") == 0, timeout=60)
    finally:
        outputs = [stop(proc) for proc in workers]
    runs = [r.value for r in producer.durable.list("runs", limit=1000).records]
    by_queue = {name: [r for r in runs if r["name"] == name] for name in ("capped", "paced")}
    for name, jobs in (("capped", capped), ("paced", paced)):
        done = by_queue[name]
        assert sorted(r["jobId"] for r in done) == sorted(job.id for job in jobs), outputs
        assert {r["status"] for r in done} == {"completed"} and {r["attempts"] for r in done} == {1}
        assert producer.durable.count(f"queue_dlq:{name}") == 0
    for name in ("capped", "paced"):  # the limits bound across processes, not in one
        assert len({r["output"]["pid"] for r in by_queue[name]}) == 2
    spans = [(r["output"]["enter"], r["output"]["exit"]) for r in by_queue["capped"]]
    assert most_at_once(spans) <= 3
    starts = [r["output"]["enter"] for r in by_queue["paced"]]
    assert most_in_window(starts, 0.5 - START_SLACK_S) <= 3
    # The limits did bind: the paced queue took at least (12 / 3 - 1) windows.
    assert max(starts) - min(starts) >= 1.5 - START_SLACK_S
    held = producer.hot.limit_held("paced", int(max(starts) * 1000) + 1)
    assert held >= 1
    ordered = sorted(starts)
    tightest = min(b - a for a, b in zip(ordered, ordered[3:], strict=False))  # 4 starts: never inside 0.5 s
    print(f"\n{config.mode}: 4 paced starts span at least {tightest * 1000:.0f} ms, paced span "
          f"{max(starts) - min(starts):.2f} s, held-back claims {held}; capped peak {most_at_once(spans)}, "
          f"capped span {max(e for _, e in spans) - min(s for s, _ in spans):.2f} s")
