"""Cluster-wide queue limits (issue 22) in one worker: declaration checks, the limits in
the queue's definition record, and a worker whose own concurrency exceeds the cluster's
held to it (real workers on two processes: tests/processes/test_queue_limits_processes.py)."""

from __future__ import annotations

import threading
import time

import pytest

from oqronkit import Batch, ConfigurationError, Engine, OqronConfig, Registry
from oqronkit.backends.claim_limits import ClaimLimits
from oqronkit.queues.limits import limits_fields, limits_from_record

from .conftest import running, wait_until

BAD = {
    "rate-not-a-pair": ({"rate_limit": 5}, "rate_limit must be \\(max_starts, window_seconds\\)"),
    "rate-zero": ({"rate_limit": (0, 1)}, "rate_limit must be"),
    "rate-bool": ({"rate_limit": (True, 1)}, "rate_limit must be"),
    "rate-huge": ({"rate_limit": (10_001, 1)}, "an integer from 1 to 10,000"),
    "rate-nan": ({"rate_limit": (5, float("nan"))}, "a finite window from 0.001 s to 31 days"),
    "rate-inf": ({"rate_limit": (5, float("inf"))}, "rate_limit must be"),
    "rate-tiny-window": ({"rate_limit": (5, 0.0001)}, "rate_limit must be"),
    "rate-long-window": ({"rate_limit": (5, 32 * 86_400)}, "rate_limit must be"),
    "global-zero": ({"global_concurrency": 0}, "global_concurrency must be an integer from 1 to 100,000"),
    "global-float": ({"global_concurrency": 2.0}, "global_concurrency must be"),
    "global-with-prefetch": ({"global_concurrency": 2, "prefetch": 5}, "leave prefetch unset or 0"),
    # One handler call starts its whole batch: more than the rate could never start.
    "batch-over-rate": ({"rate_limit": (5, 1), "batch": Batch(size=6)},
                        "the batch size \\(6\\) must be at most rate_limit's starts per window \\(5\\)"),
}


@pytest.fixture
def memory_engine(scope_names):
    engine = Engine(OqronConfig(mode="memory", database_url=None, project=scope_names[0]), registry=Registry())
    yield engine
    engine.close()


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_bad_limits_are_refused_at_declaration(memory_engine: Engine, case: str):
    options, message = BAD[case]
    with pytest.raises(ConfigurationError, match=f"Queue 'limited': .*{message}"):
        memory_engine.queue("limited", **options)
    assert "limited" not in memory_engine.registry.queues


def test_limits_round_trip_through_the_record_fields():
    limits = ClaimLimits(concurrency=4, rate=(10, 1500))
    fields = limits_fields(limits)
    assert fields == {"rateLimit": {"limit": 10, "windowMs": 1500}, "globalConcurrency": 4}
    assert limits_from_record(fields) == limits
    assert limits_fields(None) == {"rateLimit": None, "globalConcurrency": None}
    assert limits_from_record({"rateLimit": {"limit": "x"}, "globalConcurrency": -1}) is None


@pytest.mark.parametrize("mode", ["memory", "sqlite"])
def test_one_worker_is_held_to_the_limits_and_records_them(engine: Engine):
    lock, running_now, peak, starts = threading.Lock(), [0], [0], []

    def handler(ctx):
        with lock:
            running_now[0] += 1
            peak[0] = max(peak[0], running_now[0])
            starts.append(time.monotonic())
        time.sleep(0.05)
        with lock:
            running_now[0] -= 1

    q = engine.queue("limited", handler=handler, concurrency=6, global_concurrency=2, rate_limit=(4, 0.4))
    q.add_bulk([{} for _ in range(10)])
    with running(engine, poll_interval=0.2):
        wait_until(lambda: engine.durable.count("queue_job:limited") == 0, timeout=20)
    assert peak[0] == 2
    starts.sort()
    assert all(sum(1 for t in starts[i:] if t - s < 0.3) <= 4 for i, s in enumerate(starts))
    assert starts[-1] - starts[0] >= 0.7  # 10 starts at 4 per 0.4 s: two full windows at least
    record = engine.durable.get("queue", "limited").value
    assert record["globalConcurrency"] == 2 and record["rateLimit"] == {"limit": 4, "windowMs": 400}
    assert engine.hot.limit_held("limited", int(time.time() * 1000)) >= 1
    runs = [r.value for r in engine.durable.list("runs", limit=100).records]
    assert len(runs) == 10 and {r["attempts"] for r in runs} == {1}


def test_a_worker_declaring_other_limits_than_the_record_warns(memory_engine: Engine, caplog):
    from oqronkit.worker.queue_definitions import publish_queue_definitions

    q = memory_engine.queue("limited", handler=lambda ctx: None, global_concurrency=2)
    publish_queue_definitions(memory_engine.durable, {"limited": (q, 1)})
    assert not [r for r in caplog.records if r.__dict__.get("action") == "worker.queue_limits_differ"]
    q.limits = ClaimLimits(rate=(5, 1000))  # as another process would declare it
    publish_queue_definitions(memory_engine.durable, {"limited": (q, 1)})
    [warning] = [r for r in caplog.records if r.__dict__.get("action") == "worker.queue_limits_differ"]
    assert "every process must declare the same" in warning.getMessage()
    assert memory_engine.durable.get("queue", "limited").value["rateLimit"] == {"limit": 5, "windowMs": 1000}


@pytest.mark.parametrize("limits,handler_s,expected_span", [
    ({"global_concurrency": 1}, 0.4, 0.8),  # three jobs one at a time: polls back off to 250 ms
    ({"rate_limit": (1, 0.4)}, 0.0, 0.8),  # one start per 0.4 s: sleeps until the window frees
])
def test_a_held_back_queue_waits_instead_of_spinning(memory_engine: Engine, monkeypatch, limits, handler_s,
                                                     expected_span):
    claims, starts = [0], []
    real = memory_engine.hot.claim_limited

    def counting(*args, **kwargs):
        claims[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(memory_engine.hot, "claim_limited", counting)
    q = memory_engine.queue("held", handler=lambda ctx: (starts.append(time.monotonic()), time.sleep(handler_s)),
                            concurrency=3, **limits)
    q.add_bulk([{} for _ in range(3)])
    with running(memory_engine, poll_interval=0.2):
        wait_until(lambda: memory_engine.durable.count("queue_job:held") == 0, timeout=20)
    assert max(starts) - min(starts) >= expected_span - 0.05
    print(f"\n{limits}: {claims[0]} claims over {max(starts) - min(starts):.2f} s")
    assert claims[0] <= 25  # a busy loop would claim thousands of times in a second
    runs = [r.value for r in memory_engine.durable.list("runs", limit=10).records]
    assert {r["attempts"] for r in runs} == {1} and len(runs) == 3


def test_throttle_and_cluster_limits_both_hold(memory_engine: Engine):
    lock, running_now, peak, starts = threading.Lock(), [0], [0], []

    def handler(ctx):
        with lock:
            running_now[0] += 1
            peak[0] = max(peak[0], running_now[0])
            starts.append(time.monotonic())
        time.sleep(0.3)
        with lock:
            running_now[0] -= 1

    # The throttle (this process) allows 3 per 0.2 s, the cluster 2 at once and 4 per 0.5 s.
    q = memory_engine.queue("both", handler=handler, concurrency=5, throttle=(3, 0.2), global_concurrency=2,
                            rate_limit=(4, 0.5))
    q.add_bulk([{} for _ in range(6)])
    with running(memory_engine, poll_interval=0.2):
        wait_until(lambda: memory_engine.durable.count("queue_job:both") == 0, timeout=20)
    starts.sort()
    assert peak[0] == 2
    assert all(sum(1 for t in starts[i:] if t - s < 0.2) <= 2 for i, s in enumerate(starts))
    assert all(sum(1 for t in starts[i:] if t - s < 0.45) <= 4 for i, s in enumerate(starts))
