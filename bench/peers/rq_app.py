"""RQ's side of the benchmark: the phase's queue and one task with the shared body.

Worker: ``rq worker -w rq.worker.SimpleWorker --name $BENCH_NS --logging_level WARNING
--url $BENCH_REDIS_URL $BENCH_NS`` (peer-bench.md's setting: no fork per job).

RQ's key prefix is fixed (``rq:``), so the phase's namespace ``BENCH_NS`` goes into
every name RQ builds keys from: the queue, the worker and each job id
(``<ns>_j<i>``). The harness then deletes ``rq:*<ns>*`` and removes the two members
RQ adds to its shared sets (``rq:queues``, ``rq:workers``).
"""

from __future__ import annotations

import os
from typing import Any

from common import complete
from redis import Redis
from rq import Queue

NS = os.environ.get("BENCH_NS", "bench")


def bench_task(data: dict[str, Any]) -> None:
    """The shared task body: one Redis INCR."""
    complete(data)


def queue() -> Queue:
    return Queue(NS, connection=Redis.from_url(os.environ["BENCH_REDIS_URL"]))


def job_id(data: dict[str, Any]) -> str:
    return f"{NS}_j{data['i']}"
