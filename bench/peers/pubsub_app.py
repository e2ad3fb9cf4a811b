"""Our engine's side of ``bench/pubsub.py``: one topic with two consumer groups, and two
plain queues with the same handler and concurrency (the queue reference).

The worker imports this module (``python -m oqronkit worker --import pubsub_app``); the
engine is configured from the ``OQRON_*`` variables the harness sets per phase, the
topic's partitions and every consumer's concurrency from ``BENCH_PARTITIONS`` and
``BENCH_CONCURRENCY``. Every handler runs the task body of the queue benchmarks
(``common.complete``: one Redis ``INCR`` on the phase's completion counter).
"""

from __future__ import annotations

import os
from typing import Any

from common import complete

import oqronkit

TOPIC = "bench-events"
GROUPS = ("a", "b")
PARTITIONS = int(os.environ.get("BENCH_PARTITIONS", "1"))
CONCURRENCY = int(os.environ.get("BENCH_CONCURRENCY", "5"))


def handle(ctx: Any) -> None:
    """The shared task body, for a delivery (``ctx.data`` is the message's payload) or a job."""
    complete(ctx.data)


events = oqronkit.topic(TOPIC, partitions=PARTITIONS)
subscriptions = {group: events.subscribe(group, concurrency=CONCURRENCY, start_from="earliest")(handle)
                 for group in GROUPS}
#: The delivery queues the worker runs: ``bench-events@a``, ``bench-events@b``.
DELIVERY_QUEUES = [s.queue.name for s in subscriptions.values()]
#: The reference: plain queues, one per group, same handler and concurrency.
reference = {group: oqronkit.queue(f"bench-ref-{group}", handler=handle, concurrency=CONCURRENCY)
             for group in GROUPS}
REFERENCE_QUEUES = [q.name for q in reference.values()]
