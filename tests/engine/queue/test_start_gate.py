"""A rate-limited queue's start gate in a worker (issue 34): run start times hold the rate
exactly, for sync and ``async def`` handlers; a start the gate holds keeps its lease and
its attempt, goes back uncounted at a stop; unlimited queues never call the gate (two
real processes: tests/processes/test_queue_limits_processes.py)."""

from __future__ import annotations

import asyncio
import time

import pytest

from oqronkit import Engine
from oqronkit.clock import now_ms

from .conftest import fast_services, running, wait_until

#: A lease token no claim hands out: "another worker's" start, logged ahead.
FOREIGN_TOKEN = 10**15


def runs_of(engine: Engine, queue: str) -> list[dict]:
    return [r.value for r in engine.durable.list("runs", limit=1000).records if r.value["name"] == queue]


def most_in_window(starts: list[int], window_ms: int) -> int:
    starts = sorted(starts)
    return max(sum(1 for t in starts[i:] if t - first < window_ms) for i, first in enumerate(starts))


@pytest.mark.parametrize("mode", ["memory", "sqlite"])
def test_sync_starts_hold_the_rate_exactly(engine: Engine):
    q = engine.queue("paced", handler=lambda ctx: time.sleep(0.01), concurrency=6, rate_limit=(5, 0.3))
    q.add_bulk([{} for _ in range(16)])
    with running(engine):
        wait_until(lambda: engine.durable.count("queue_job:paced") == 0, timeout=20)
    starts = [r["startedAt"] for r in runs_of(engine, "paced")]
    assert len(starts) == 16 and most_in_window(starts, 300) <= 5
    assert max(starts) - min(starts) >= 900  # 16 starts at 5 per 300 ms: three windows past the first


@pytest.mark.parametrize("mode", ["memory", "sqlite"])
def test_async_starts_pass_the_gate_in_groups_of_the_rate(engine: Engine):
    async def handler(ctx):
        await asyncio.sleep(0.01)
        return ctx.attempt

    q = engine.queue("paced", handler=handler, concurrency=8, rate_limit=(3, 0.2))
    q.add_bulk([{} for _ in range(10)])
    with running(engine):
        wait_until(lambda: engine.durable.count("queue_job:paced") == 0, timeout=20)
    runs = runs_of(engine, "paced")
    assert {r["status"] for r in runs} == {"completed"} and {r["output"] for r in runs} == {1}
    starts = [r["startedAt"] for r in runs]
    assert len(starts) == 10 and most_in_window(starts, 200) <= 3 and max(starts) - min(starts) >= 600


def log_a_start_ahead(engine: Engine, queue: str, rate: tuple[int, int], ahead_ms: int) -> list[int]:
    """Wrap the durable read of the claimed jobs so that the first one logs a foreign start
    ``ahead_ms`` in the future: the claimed job then finds the window full at its gate."""
    logged: list[int] = []
    real = engine.durable.get_many

    def reading(*args, **kwargs):
        if not logged and args[0] == f"queue_job:{queue}":
            got = engine.hot.start_limited(queue, tokens=[FOREIGN_TOKEN], now=now_ms() + ahead_ms, rate=rate)
            assert got.at is not None
            logged.append(got.at)
        return real(*args, **kwargs)

    engine.durable.get_many = reading
    return logged


@pytest.mark.parametrize("mode", ["memory", "sqlite", "redis-postgres"])
def test_a_start_held_at_the_gate_keeps_its_lease_and_its_attempt(engine: Engine):
    # Held about 1.5 s, three leases of 0.5 s: only the heartbeat's renewals keep it.
    q = engine.queue("held", handler=lambda ctx: ctx.attempt, rate_limit=(1, 0.3), lease=0.5)
    foreign = log_a_start_ahead(engine, "held", (1, 300), ahead_ms=1200)
    job = q.add({})
    with running(engine) as worker:
        wait_until(lambda: worker.services is not None)
        fast_services(worker)  # a lapsed lease would be rescued (a stall, a second run) within 0.2 s
        wait_until(lambda: engine.durable.count("queue_job:held") == 0, timeout=10)
        held = worker.stats_snapshot().get("start_held", 0)
    [run] = runs_of(engine, "held")
    assert run["jobId"] == job.id and run["status"] == "completed" and run["output"] == 1 and run["attempts"] == 1
    assert run["startedAt"] >= foreign[0] + 300 and held >= 1


@pytest.mark.parametrize("mode", ["memory", "sqlite"])
def test_a_stop_while_held_at_the_gate_gives_the_job_back_uncounted(engine: Engine):
    q = engine.queue("held", handler=lambda ctx: None, rate_limit=(1, 0.3), lease=5)
    log_a_start_ahead(engine, "held", (1, 300), ahead_ms=30_000)
    job = q.add({})
    with running(engine) as worker:
        wait_until(lambda: worker.stats_snapshot().get("start_held", 0) >= 1)
        started = time.monotonic()
    assert time.monotonic() - started < 2  # the stop did not wait for the gate
    back = q.get_job(job.id)
    assert back is not None and back.status == "waiting" and back.attempts == 0
    assert runs_of(engine, "held") == [] and worker.stats_snapshot().get("returned") == 1
    assert q.counts()["waiting"] == 1  # ready again, its lease released


@pytest.mark.parametrize("mode", ["memory"])
def test_queues_without_a_rate_never_call_the_gate(engine: Engine, monkeypatch):
    calls: list[str] = []
    real = engine.hot.start_limited
    monkeypatch.setattr(engine.hot, "start_limited", lambda queue, **kw: (calls.append(queue), real(queue, **kw))[1])
    plain = engine.queue("plain", handler=lambda ctx: None, concurrency=4)
    capped = engine.queue("capped", handler=lambda ctx: None, concurrency=4, global_concurrency=2)
    paced = engine.queue("paced", handler=lambda ctx: None, rate_limit=(100, 1))
    for queue in (plain, capped, paced):
        queue.add_bulk([{} for _ in range(5)])
    with running(engine):
        wait_until(lambda: all(engine.durable.count(f"queue_job:{n}") == 0 for n in ("plain", "capped", "paced")))
    assert calls == ["paced"] * 5
