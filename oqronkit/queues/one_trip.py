"""A single ``add`` of a bare payload in one round trip (postgres mode, and redis mode
on a standalone server).

Both planes are on one server there (``planes.signal_together``): in postgres mode the
job's row and its signal are sent pipelined in one transaction, and the worker's NOTIFY
goes out only once the row is committed; in redis mode one script inserts the row and,
only if it did, signals the job. So an ``add`` from a view costs one round trip instead
of two. Only for a fresh random id (no options: no ``job_id`` to find
taken, no dependencies, no window) and outside an application transaction the add
joined (that one commits the row itself; the signal waits for its commit). Anything
else takes the queue's general path.
"""

from __future__ import annotations

from typing import Any, cast

from ..backends.hot_types import Signal
from ..backends.protocols import SignallingStore
from ..clock import now_ms
from ..codec import json_fragment
from ..durable import RecordWrite
from ..errors import DuplicateRecord, InvalidJob
from ..lifecycle import emit_many
from ..planes import signal_together
from ..transactions import joined
from .enqueue import build_job, encode_payload, payload_limit
from .jobs import Job


def add_in_one_trip(queue: Any, items: list[tuple[Any, Any]]) -> Job | None:
    """The job ``queue`` (a :class:`~oqronkit.queues.queue.Queue`, which imports this
    module) added, or None when this add is not one this path takes."""
    if len(items) != 1 or items[0][1] or joined() or not signal_together(queue.engine):
        return None
    text, data = encode_payload(items[0][0], limit=payload_limit(queue), queue=queue.name)
    job = build_job(queue, data, payload_checked=True)
    if job.status not in ("waiting", "delayed"):
        return None
    durable = queue.engine.durable
    value = cast(dict[str, Any], job.to_value())  # a fresh dict
    value["data"] = json_fragment(text)  # the payload's checked JSON, not encoded a second time
    rows = durable.encode_all([RecordWrite(job.namespace, job.id, value, new=True, checked=True)])
    store = cast(SignallingStore, durable.store)  # signal_together checked
    try:
        store.insert_and_signal(durable.scope, rows, queue.name, [Signal(job.id, job.priority, job.run_at, job.lifo)],
                                now_ms())
    except DuplicateRecord as exc:  # fresh random ids never clash; say so loudly if they did
        raise InvalidJob(f"A new job id of {queue.name!r} already existed; no job was added: {exc}") from exc
    emit_many(queue.registry, queue, "enqueued", [job], inline=True)  # Queue._enqueued's event: nothing to join
    return job
