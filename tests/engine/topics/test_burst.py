"""A burst worker (``--burst``) stops only once every retained message has been handed
to its groups and handled, not as soon as the delivery queues look empty: deliveries
exist only after the topics' dispatcher has run, which may come after the queues' first
empty claims."""

from __future__ import annotations

import threading
import time

import pytest

from oqronkit import Engine
from oqronkit.topics.dispatch import Dispatcher
from oqronkit.worker import WorkerProcess


def test_a_burst_worker_waits_for_the_dispatcher_to_hand_over_every_message(engine: Engine, monkeypatch):
    orders = engine.topic("burst-orders", partitions=2)
    seen: list[int] = []
    lock = threading.Lock()

    def handle(ctx):
        with lock:
            seen.append(ctx.data["n"])

    orders.subscribe("billing", start_from="earliest")(handle)
    orders.publish_many([{"payload": {"n": n}, "key": f"k{n % 3}"} for n in range(12)])
    dispatch = Dispatcher.dispatch

    def slow_dispatch(self, sub):  # the queues' empty claims come first, as under load
        time.sleep(0.5)
        return dispatch(self, sub)

    monkeypatch.setattr(Dispatcher, "dispatch", slow_dispatch)
    process = WorkerProcess(engine, burst=True, services=False, poll_interval=0.05, topic_poll_interval=0.05)
    started = time.monotonic()
    process.run()
    assert sorted(seen) == list(range(12)), "the burst worker stopped before every message was handled"
    assert orders.lag("billing") == {"partitions": {"0": 0, "1": 0}, "total": 0, "inQueue": 0}
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("published", [0, 1])
def test_a_burst_worker_with_nothing_left_stops(engine: Engine, published: int):
    quiet = engine.topic("burst-quiet")
    quiet.subscribe("audit", start_from="earliest")(lambda ctx: None)
    for n in range(published):
        quiet.publish({"n": n})
    process = WorkerProcess(engine, burst=True, services=False, poll_interval=0.05, topic_poll_interval=0.05)
    started = time.monotonic()
    process.run()
    assert time.monotonic() - started < 10
    assert quiet.lag("audit")["total"] == 0
