"""Dramatiq's side of the benchmark: a ``RedisBroker`` whose key namespace is the
phase's ``BENCH_NS``, and one actor.

Worker: ``dramatiq -p 1 -t 8 --skip-logging dramatiq_app`` (peer-bench.md's setting).
``--skip-logging`` leaves logging unconfigured and this module sets WARNING, so the
worker logs no line per start-up step or message. Every key the broker writes starts
with ``<ns>:``; the harness deletes them afterwards.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import dramatiq
from common import complete
from dramatiq.brokers.redis import RedisBroker

logging.basicConfig(level=logging.WARNING)

broker = RedisBroker(url=os.environ.get("BENCH_REDIS_URL"), namespace=os.environ.get("BENCH_NS", "bench"))
dramatiq.set_broker(broker)


@dramatiq.actor(queue_name="bench")
def bench_task(data: dict[str, Any]) -> None:
    """The shared task body: one Redis INCR."""
    complete(data)
