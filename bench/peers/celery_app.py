"""Celery's side of the benchmark: a Redis broker, no result backend, one task.

Worker: ``celery -A celery_app worker -P prefork -c 2 --loglevel WARNING -n <ns>@%h``
(peer-bench.md's setting). Kombu's ``global_keyprefix`` puts the phase's namespace
``BENCH_NS`` in front of every key (queue lists, bindings, the ``unacked`` hashes),
and the harness deletes ``<ns>:*`` afterwards.
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery
from common import complete

NS = os.environ.get("BENCH_NS", "bench")

app = Celery("bench", broker=os.environ.get("BENCH_REDIS_URL"))
app.conf.update(
    task_default_queue="bench",
    task_ignore_result=True,
    broker_transport_options={"global_keyprefix": f"{NS}:"},
    broker_connection_retry_on_startup=True,
)


@app.task(name="bench_task")
def bench_task(data: dict[str, Any]) -> None:
    """The shared task body: one Redis INCR."""
    complete(data)
