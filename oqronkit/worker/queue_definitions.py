"""What a worker records of the queues it consumes: each queue's definition in the
``queue`` control namespace (keeping its persisted pause state), and for workers
declared with ``oqronkit.worker`` a record in the ``worker`` namespace."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..clock import now_ms
from ..durable import DurablePlane, RecordWrite
from ..namespaces import QUEUE, WORKER
from ..queues.limits import limits_fields, limits_from_record

if TYPE_CHECKING:
    from ..queues.queue import Queue

logger = logging.getLogger(__name__)


def publish_queue_definitions(durable: DurablePlane, queues: dict[str, tuple[Queue, int]]) -> set[str]:
    """Write the records of ``queues`` (name: (queue, this process's concurrency));
    the names of those paused."""
    existing = {r.id: r.value for r in durable.get_many(QUEUE, list(queues))}
    writes, paused = [], set()
    for name, (queue, concurrency) in queues.items():
        current: dict[str, Any] = existing.get(name, {})
        assert queue.fn is not None, "a worker consumes only queues with a handler"
        handler = f"{queue.fn.__module__}.{queue.fn.__qualname__}"
        writes.append(RecordWrite(QUEUE, name, {
            **current, "name": name, "paused": bool(current.get("paused")),
            "strategy": queue.strategy, "concurrency": queue.concurrency, "retries": queue.retries,
            "leaseMs": queue.lease_ms,
            "deadLetter": queue.dead_letter, "handler": handler, **limits_fields(queue.limits),
            "updatedAt": now_ms(),
            "batch": queue.batch.describe() if queue.batch else None, "replayable": queue.replayable,
        }))
        if current and limits_from_record(current) != queue.limits:
            # Each process enforces the limits it declares: a mix means the cluster's limit is not one number.
            logger.warning("queue %s: this worker's limits (%s) differ from the recorded ones (%s); every process "
                           "must declare the same rate_limit and global_concurrency", name,
                           limits_fields(queue.limits), limits_fields(limits_from_record(current)),
                           extra={"action": "worker.queue_limits_differ"})
        if current.get("paused"):
            paused.add(name)
        if queue.module == "worker":
            writes.append(RecordWrite(WORKER, name, {
                "name": name, "queue": name, "concurrency": concurrency, "handler": handler, "updatedAt": now_ms(),
            }))
    durable.put_many(writes)
    return paused
