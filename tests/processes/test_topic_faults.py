"""Pub/sub under faults, with real worker processes in ``redis-postgres`` mode on
throwaway servers: a consumer SIGKILLed mid-message (redelivered once, after its lease)
and FLUSHALL of the hot plane mid-delivery (every message reaches every group, never
twice at the same time)."""

from __future__ import annotations

import itertools
import signal
import time
from collections import Counter

import pytest

from oqronkit import Engine
from tests.dedicated import dedicated_redis
from tests.engine.queue.conftest import wait_until
from tests.processes.test_faults import all_runs, by_job, concurrent_runs, fleet, make_config, producer

pytestmark = pytest.mark.slow


def delivery_runs(engine: Engine, topic: str) -> list[dict]:
    return [r for r in all_runs(engine) if r.get("topic") == topic]


def test_a_consumer_sigkilled_mid_message_is_redelivered_once_after_its_lease(tmp_path, scope_names, pg_schema_url):
    with dedicated_redis() as redis_server, producer(make_config(pg_schema_url, redis_server.url,
                                                                 scope_names[0])) as engine:
        topic = engine.topic("slow_events")
        with fleet(engine.config, tmp_path) as workers:
            first = workers.spawn()
            message = topic.publish({"seconds": 3})
            wait_until(lambda: (r := engine.durable.get("queue_job:slow_events@one", message)) is not None
                       and r.value["status"] == "active", timeout=30)
            second = workers.spawn()
            time.sleep(1.0)
            first.send_signal(signal.SIGKILL)
            first.wait(10)
            wait_until(lambda: any(r["status"] == "completed" for r in delivery_runs(engine, "slow_events")),
                       timeout=40)
            assert second.poll() is None, workers.logs()
        runs = delivery_runs(engine, "slow_events")
        assert {r["messageId"] for r in runs} == {message}
        completed = [r for r in runs if r["status"] == "completed"]
        assert len(completed) == 1 and completed[0]["output"]["pid"] == second.pid, (runs, workers.logs())
        assert len(runs) <= 2 and not concurrent_runs(by_job(runs))
        assert engine.durable.count("queue_job:slow_events@one") == 0


def test_flushall_mid_delivery_reaches_every_group_with_every_message(tmp_path, scope_names, pg_schema_url):
    messages = 2000
    with dedicated_redis() as redis_server, producer(make_config(pg_schema_url, redis_server.url,
                                                                 scope_names[0])) as engine:
        topic = engine.topic("events", partitions=2)
        ids = set(topic.publish_many([{"payload": {"ms": 2, "i": i}, "key": f"k{i % 50}"} for i in range(messages)]))
        with fleet(engine.config, tmp_path) as workers:
            workers.spawn()
            workers.spawn()

            def completed(group: str) -> Counter[str]:
                return Counter(r["messageId"] for r in delivery_runs(engine, "events")
                               if r["group"] == group and r["status"] == "completed")

            wait_until(lambda: len(completed("alpha")) + len(completed("beta")) >= messages // 2, timeout=60,
                       interval=0.2)
            redis_server.flushall()
            try:
                wait_until(lambda: set(completed("alpha")) == ids and set(completed("beta")) == ids, timeout=90,
                           interval=0.5)
            except AssertionError:
                pytest.fail(f"alpha {len(completed('alpha'))}, beta {len(completed('beta'))} of {messages}\n"
                            f"{workers.logs()}")
            assert all(p.poll() is None for p in workers.procs), workers.logs()
        runs = delivery_runs(engine, "events")
        for group in ("alpha", "beta"):
            mine = [r for r in runs if r["group"] == group]
            assert not concurrent_runs(by_job(mine)), group
            twice = [m for m, n in completed(group).items() if n > 1]
            # A flush also loses the leases of deliveries running then: the reconciler
            # signals them again and one may run a second time after the first ended
            # (at least once; the queue engine's FLUSHALL test sees the same). Reported.
            print(f"\n{group}: {len(mine)} runs for {messages} messages; completed twice: {len(twice)}")
            assert len(twice) <= messages // 20, (group, twice[:5])
        assert engine.durable.count("queue_dlq:events@alpha") + engine.durable.count("queue_dlq:events@beta") == 0


def test_ordering_by_key_holds_across_two_real_worker_processes(tmp_path, scope_names, pg_schema_url):
    messages, keys = 300, 10
    with dedicated_redis() as redis_server, producer(make_config(pg_schema_url, redis_server.url,
                                                                 scope_names[0])) as engine:
        topic = engine.topic("ordered", partitions=2, ordering="key")
        topic.publish_many([{"payload": {"ms": 5, "n": n}, "key": f"k{n % keys}"} for n in range(messages)])
        with fleet(engine.config, tmp_path) as workers:
            workers.spawn()
            workers.spawn()
            wait_until(lambda: len([r for r in delivery_runs(engine, "ordered") if r["status"] == "completed"])
                       >= messages, timeout=90, interval=0.5)
        runs = [r for r in delivery_runs(engine, "ordered") if r["status"] == "completed"]
        assert len({r["messageId"] for r in runs}) == messages
        assert len({r["workerId"] for r in runs}) == 2  # both processes took part
        for key in {r["input"]["key"] for r in runs}:
            mine = sorted((r for r in runs if r["input"]["key"] == key), key=lambda r: r["startedAt"])
            offsets = [r["input"]["offset"] for r in mine]
            assert offsets == sorted(offsets), key
            assert all(a["endedAt"] <= b["startedAt"] for a, b in itertools.pairwise(mine)), key
