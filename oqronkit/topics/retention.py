"""Topic retention, run by the leader with the other retention work: each topic's
messages older than its ``retentionMs`` and, per partition, beyond its newest
``retentionCount``, in bounded batches (a topic's log is never loaded at once).

A delivery in flight keeps a snapshot of its message in its job, so pruning a message
never leaves a delivery without its payload: it runs from the snapshot.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from ..clock import now_ms
from ..durable import DurablePlane
from ..namespaces import TOPIC, topic_msg_namespace
from ..skipped import guarded
from . import log

logger = logging.getLogger(__name__)


def prune_topics(durable: DurablePlane, *, batch: int = 10_000, now: int | None = None) -> int:
    """Remove what each topic's retention no longer keeps; at most ``batch`` rows per
    topic and rule this pass. The rows removed."""
    at = now_ms() if now is None else now
    removed = 0
    for record in durable.list(TOPIC, limit=1000).records:
        removed += guarded("topic retention", TOPIC, record.id,
                           functools.partial(_prune, durable, record.value, batch, at)) or 0
    if removed:
        logger.info("topic retention removed %d message(s)", removed, extra={"action": "retention.topics"})
    return removed


def _prune(durable: DurablePlane, definition: dict[str, Any], batch: int, now: int) -> int:
    name = str(definition["name"])
    removed = 0
    age = definition.get("retentionMs")
    if isinstance(age, int) and age > 0:
        removed += durable.prune_older_than(topic_msg_namespace(name), cutoff_ms=now - age, limit=batch)
    count = definition.get("retentionCount")
    partitions = definition.get("partitions")
    if isinstance(count, int) and count > 0 and isinstance(partitions, int):
        for partition, next_offset in enumerate(log.next_offsets(durable, name, partitions)):
            removed += _beyond_count(durable, name, partition, next_offset - count, batch)
    return removed


def _beyond_count(durable: DurablePlane, topic: str, partition: int, keep_from: int, batch: int) -> int:
    """Delete the partition's messages with offsets below ``keep_from`` (oldest first)."""
    if keep_from <= 0:
        return 0
    oldest = log.read(durable, topic, partition, after=-1, limit=batch)
    doomed = [r.id for r in oldest if int(r.value["offset"]) < keep_from]
    return durable.delete_many(topic_msg_namespace(topic), doomed) if doomed else 0
