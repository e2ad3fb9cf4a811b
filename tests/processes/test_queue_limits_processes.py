"""Cluster-wide queue limits (issues 22 and 34) across two real worker processes: never
more than ``global_concurrency`` handlers at once, never more than ``rate_limit[0]`` run
starts (their recorded ``startedAt``) in any window, and nothing lost, retried, stalled
or dead-lettered because of a limit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from oqronkit import Engine, OqronConfig, Registry
from oqronkit.clock import now_ms
from oqronkit.live import live_workers
from tests.engine.queue.conftest import wait_until

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
CAPPED, PACED = 12, 12
#: The rate-limited queues of limits_app whose handler starts are checked: the limit
#: (starts, window ms) and how many jobs (enough for several full windows).
RATES = {"rate20": ((20, 1000), 70), "rate4": ((4, 250), 30)}


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
    for name in ("capped", "paced", "gated", *RATES):
        engine.queue(name)
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


def most_starts_in_window(starts: list[float], window_ms: int, limit: int) -> tuple[int, float]:
    """The most run starts (epoch ms) in any half-open window of ``window_ms``, and the
    shortest span of ``limit + 1`` starts (the figure issue 34 measured: at least the
    window when the limit holds)."""
    starts = sorted(starts)
    most = max(sum(1 for t in starts[i:] if t - first < window_ms) for i, first in enumerate(starts))
    return most, min(b - a for a, b in zip(starts, starts[limit:], strict=False))


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
    starts = [r["startedAt"] for r in by_queue["paced"]]  # ms, as the start gate logged them
    most, tightest = most_starts_in_window(starts, 500, 3)
    assert most <= 3 and tightest >= 500  # 4 starts: never inside 0.5 s
    # The limits did bind: the paced queue took at least (12 / 3 - 1) windows.
    assert max(starts) - min(starts) >= 1500
    held = producer.hot.limit_held("paced", max(starts) + 1)
    assert held >= 1
    print(f"\n{config.mode}: 4 paced starts span at least {tightest} ms, paced span "
          f"{(max(starts) - min(starts)) / 1000:.2f} s, held-back claims {held}; capped peak {most_at_once(spans)}, "
          f"capped span {max(e for _, e in spans) - min(s for s, _ in spans):.2f} s")


def test_two_workers_hold_the_rate_on_handler_starts(producer, config):
    """Issue 34: the rate limit holds where a rate-limited API behind the handler sees it,
    on the runs' startedAt, not only on the claims: no window of the limit's length
    holds more than its count of handler starts, across two processes."""
    workers = [spawn(config), spawn(config)]
    try:
        wait_until(lambda: len(live_workers(producer.hot)) == 2, timeout=30)
        added = {name: producer.get_queue(name).add_bulk([{"i": i} for i in range(count)])
                 for name, (_, count) in RATES.items()}
        wait_until(lambda: all(producer.durable.count(f"queue_job:{name}") == 0 for name in RATES), timeout=60)
    finally:
        outputs = [stop(proc) for proc in workers]
    runs = [r.value for r in producer.durable.list("runs", limit=1000).records]
    for name, ((most, window_ms), _) in RATES.items():
        done = [r for r in runs if r["name"] == name]
        assert sorted(r["jobId"] for r in done) == sorted(job.id for job in added[name]), outputs
        assert {r["status"] for r in done} == {"completed"} and {r["attempts"] for r in done} == {1}
        assert len({r["output"]["pid"] for r in done}) == 2  # both processes started some
        worst, span = most_starts_in_window([r["startedAt"] for r in done], window_ms, most)
        # The handler's own clock, read as it begins: startedAt plus the gate's reply and the
        # hand-off (GIL turns among the slot threads), reported, not held to the limit.
        entered = [r["output"]["enter"] * 1000 for r in done]
        lag = sorted(e - r["startedAt"] for e, r in zip(entered, done, strict=True))
        print(f"\n{config.mode} {name}: at most {worst} starts in a {window_ms} ms window, {most + 1} within "
              f"{span} ms at the least; handler entries: at most {most_starts_in_window(entered, window_ms, most)[0]}, "
              f"{lag[len(lag) // 2]:.1f} ms after startedAt (median, max {lag[-1]:.1f})")
        assert worst <= most, f"{worst} starts of {name} within {window_ms} ms ({most + 1} within {span} ms)"
        assert lag[0] >= 0  # no handler begins before its recorded start


@pytest.mark.parametrize("config", ["redis-postgres", "postgres"], indirect=True)
def test_a_worker_killed_while_its_start_is_held_loses_no_job(producer, config):
    """A job waiting at the start gate when its worker dies is rescued and runs once."""
    import psycopg

    job = producer.get_queue("gated").add({})
    with psycopg.connect(config.database_url) as blocker:
        # The worker claims the job, then its durable read waits on this lock for longer
        # than the window: its claim's entry leaves the log, and a start logged now
        # ("another worker's") fills the window it reaches the gate in.
        blocker.execute("LOCK TABLE oqron_jobs IN ACCESS EXCLUSIVE MODE")
        holder = spawn(config)
        try:
            wait_until(lambda: producer.hot.depths("gated", now_ms()).active == 1, timeout=30)
            time.sleep(1.1)
            assert producer.hot.start_limited("gated", tokens=[10**15], now=now_ms(), rate=(1, 1000)).at
        except BaseException:
            stop(holder)
            raise
    time.sleep(0.3)  # the read lands, the gate holds the start for about a second
    assert not producer.durable.list("runs", limit=10).records
    holder.kill()
    holder.wait()
    rescuer = spawn(config)
    try:
        wait_until(lambda: producer.durable.count("queue_job:gated") == 0, timeout=60)
    finally:
        output = stop(rescuer)
    [run] = [r.value for r in producer.durable.list("runs", limit=10).records]
    assert run["jobId"] == job.id and run["status"] == "completed", output
    # The holder died with the lease: the rescuer counts it as stalled, as any claimed job's.
    assert run["attempts"] == 2
