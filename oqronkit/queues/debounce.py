"""Debounce for ``Queue.add`` (docs/how-to/uniqueness-and-debounce.md): ``add(data, debounce=seconds,
unique_key=...)`` keeps only the latest payload of a key until its window closes, then
one job runs with it.

The first add of a window writes a pointer ``queue_debounce:<queue>`` / ``<key>`` and a
job due when the window closes, in one atomic write. A later add replaces that job's
payload while nobody has claimed it: it first takes the job out of the hot plane's
ready/delayed sets (``remove`` is atomic, so a worker cannot claim it meanwhile, and a
claimed job cannot be removed), then compare-and-sets the payload and signals the job
back at its original due time. The window is fixed (not extended by later adds), so a
steady stream of adds cannot postpone the job forever. Once the job was claimed (or is
gone), the next add deletes the pointer (compare-and-set on its ``jobId``) and opens a
new window. A short per-key hot-plane lock serialises adders of one key; every step is a
compare-and-set, so a lapsed lock costs at most an extra window, never a payload.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from typing import Any

from ..clock import now_ms
from ..durable import RecordWrite
from ..errors import BackendUnavailable
from ..ids import new_id
from ..lifecycle import emit_now
from ..namespaces import debounce_namespace, job_namespace
from .enqueue import build_job, encode_payload
from .jobs import Job
from .uniqueness import MAX_ROUNDS, Window

logger = logging.getLogger(__name__)

#: A pointer outlives its job's due time by this much, then retention prunes it (a
#: stale pointer is harmless: its job is claimed or gone, so the next add replaces it).
POINTER_GRACE_MS = 24 * 3600 * 1000
#: The per-key lock: held for a few durable round trips, so a lapse means a stuck adder.
LOCK_TTL_MS = 10_000
#: How long an add waits for the key's lock before going ahead without it.
LOCK_WAIT_S = 5.0


def add_debounced(queue: Any, data: Any, options: dict[str, Any], window: Window) -> Job:
    """The job of ``window.key``'s open window, now holding ``data``; a new window's job
    (due in ``window.ms``) when there is none or its job was claimed."""
    engine = queue.engine
    durable, namespace = engine.durable, debounce_namespace(queue.name)
    # delay/run_at can only be None here (window_of refused others): the due time is ours.
    options = {name: value for name, value in options.items() if name not in ("delay", "run_at")}
    with _key_lock(engine.hot, f"debounce:{queue.name}:{window.key}"):
        for _ in range(MAX_ROUNDS):
            found = durable.get(namespace, window.key)
            if found is None:
                job = build_job(queue, data, run_at=now_ms() + window.ms, **options)
                due = job.run_at or job.created_at
                pointer = {"key": window.key, "queue": queue.name, "jobId": job.id, "createdAt": job.created_at,
                           "dueAt": due}
                if durable.insert_guarded(RecordWrite(namespace, window.key, pointer, due + POINTER_GRACE_MS),
                                          [RecordWrite(job.namespace, job.id, job.to_value())]):
                    queue._signal([job])
                    emit_now(queue, "enqueued", job)  # a replaced payload is the same job: no event
                    return job
                continue
            job_id = found.value.get("jobId")
            replaced = _replace_payload(queue, job_id, data) if isinstance(job_id, str) else None
            if replaced is not None:
                return replaced
            # Claimed or gone: close this window (only if the pointer still names that job).
            durable.compare_and_set(namespace, window.key, expect={"jobId": job_id}, value=None)
    raise BackendUnavailable(f"Queue {queue.name!r}: the debounce key {window.key!r} kept changing under "
                             f"{MAX_ROUNDS} attempts; nothing was added.")


def _replace_payload(queue: Any, job_id: str, data: Any) -> Job | None:
    """Put ``data`` in the unclaimed job ``job_id``; None when it was claimed, ran or is gone."""
    engine = queue.engine
    namespace = job_namespace(queue.name)
    record = engine.durable.get(namespace, job_id)
    if record is None:
        return None
    job = Job.from_value(record.value)
    if job.status not in ("waiting", "delayed") or job.attempts:
        return None
    payload = encode_payload(data, limit=engine.config.max_record_bytes - 4096, queue=queue.name)[1]
    if not engine.hot.remove(queue.name, [job_id]):
        return None  # leased by a worker (or lost with the hot plane: the reconciler signals it)
    try:
        now = now_ms()
        changed = engine.durable.compare_and_set(
            namespace, job_id, expect={"status": job.status, "attempts": 0, "updatedAt": job.updated_at},
            value={**record.value, "data": payload, "updatedAt": now})
    finally:
        queue._signal([job])  # back at its original due time, replaced or not
    if not changed:
        return None
    job.data, job.updated_at = payload, now
    return job


@contextlib.contextmanager
def _key_lock(hot: Any, name: str) -> Iterator[None]:
    """Hold the hot-plane lock ``name`` for the block; after :data:`LOCK_WAIT_S` go on
    without it (the compare-and-sets keep the payloads safe)."""
    owner, deadline = new_id(), time.monotonic() + LOCK_WAIT_S
    held = False
    while not held:
        held = hot.acquire_lock(name, owner, ttl_ms=LOCK_TTL_MS, now=now_ms())
        if held or time.monotonic() > deadline:
            break
        time.sleep(0.005)
    if not held:
        logger.warning("debounce lock %s still held after %.0f s; adding without it", name, LOCK_WAIT_S,
                       extra={"action": "queue.debounce.lock_timeout"})
    try:
        yield
    finally:
        if held:
            with contextlib.suppress(BackendUnavailable):
                hot.release_lock(name, owner)
