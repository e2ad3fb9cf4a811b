"""Removing a stale queue record: the ``queue`` control record (paused state, handler,
concurrency) of a queue that holds no job and no dead letter, left behind by a queue
since renamed or removed from the code, so it stops showing as a queue.

A worker that still declares the queue writes its record again when it starts; a
producer's ``add`` needs no record, so removing one never loses work.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..errors import InvalidNamespace, InvalidState
from ..namespaces import QUEUE, dlq_namespace, job_namespace

if TYPE_CHECKING:
    from ..engine import Engine

logger = logging.getLogger(__name__)


def queue_holds_jobs(engine: Engine, name: str) -> bool:
    """True when queue ``name`` has a job (any status) or a dead letter in the durable
    plane. A namespace the facade refuses to address (a name with a control character,
    accepted by older versions) is skipped: callers that can read such rows check them."""
    durable = engine.durable
    for namespace in (job_namespace(name), dlq_namespace(name)):
        try:
            if durable.list(namespace, limit=1).records:
                return True
        except InvalidNamespace:
            continue
    return False


def remove_queue_record(engine: Engine, name: str) -> bool:
    """Delete queue ``name``'s control record; False when there was none.

    Raises :class:`InvalidState` while the queue still holds jobs or dead letters
    (pause it, or delete them first)."""
    if queue_holds_jobs(engine, name):
        raise InvalidState(f"Queue {name!r} still holds jobs or dead letters; its record stays.")
    removed = engine.durable.delete(QUEUE, name)
    logger.info("queue record %s %s", name, "removed" if removed else "was already gone",
                extra={"action": "queue.record_removed"})
    return removed
