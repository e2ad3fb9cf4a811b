"""Uniqueness windows for ``Queue.add`` (docs/how-to/uniqueness-and-debounce.md): the add options
``unique_for``, ``unique_key`` and ``debounce``, and the unique add itself.

A window is a durable record ``queue_unique:<queue>`` / ``<key>`` naming the first job,
its ``expires_at`` at the window's end. It is written in the same atomic write as that
job (:meth:`~oqronkit.durable.DurablePlane.insert_guarded`), so a crash never leaves one
without the other, and the insert's uniqueness settles races between processes. An
expired record counts as absent: it is deleted by a compare-and-set on its ``jobId``
and ``expiresAt`` (only one racer's delete matters) and the insert is tried again.
Debounce (:mod:`oqronkit.queues.debounce`) shares the option parsing; :mod:`oqronkit.queues.windows`
sends each add to one or the other.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal, NamedTuple, cast

from ..clock import now_ms
from ..codec import check_text
from ..durable import RecordWrite
from ..errors import BackendUnavailable, InvalidJob
from ..lifecycle import emit_now
from ..namespaces import dlq_namespace, job_namespace, unique_namespace
from .backoff import to_ms
from .enqueue import build_job, encode_payload
from .jobs import Job, JobStatus

WINDOW_OPTIONS = frozenset({"unique_for", "unique_key", "debounce"})
#: Longest window: a year (a key held longer is a job_id, which never expires).
MAX_WINDOW_S = 366 * 24 * 3600
#: Insert / expired-delete rounds before giving up (each round loses only to a racer
#: that made progress, so this is never reached but under a broken clock).
MAX_ROUNDS = 50


class Window(NamedTuple):
    """A parsed uniqueness or debounce request."""

    mode: Literal["unique", "debounce"]
    ms: int
    key: str


@dataclass(slots=True, kw_only=True)
class GoneJob(Job):
    """What a unique ``add`` returns when its window's first job is no longer stored
    (it completed and was deleted, or an operator removed it): only ``id`` and ``queue``
    are known; ``data`` is None and ``status`` says ``"completed"`` (the engine cannot
    tell a completion from a removal). Test for it with ``isinstance(job, GoneJob)``
    or ``getattr(job, "gone", False)``."""

    gone: bool = True


def payload_key(data: Any) -> str:
    """The default ``unique_key``: ``"sha256:"`` and the SHA-256 of the payload's JSON
    with sorted keys, so equal payloads share a key whatever their dict order."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def window_of(queue: Any, data: Any, options: dict[str, Any]) -> Window | None:
    """Pop the window options from ``options`` and check how they combine with the
    others; None when the add has no window. InvalidJob names the conflict."""
    unique_for, debounce = options.pop("unique_for", None), options.pop("debounce", None)
    key = options.pop("unique_key", None)
    if unique_for is None and debounce is None:
        if key is not None:
            raise InvalidJob("unique_key needs unique_for or debounce (the window it is unique in).")
        return None
    if unique_for is not None and debounce is not None:
        raise InvalidJob("Pass either unique_for or debounce, not both: a debounced key already runs one job "
                         "per window.")
    what = "unique_for" if unique_for is not None else "debounce"
    if options.get("job_id") is not None:
        raise InvalidJob(f"{what} and job_id cannot be combined: job_id is a dedupe key of its own (until the "
                         f"job completes); name the window's key with unique_key instead.")
    if debounce is not None:
        for name in ("delay", "run_at", "depends_on"):
            if options.get(name):
                raise InvalidJob(f"debounce and {name} cannot be combined: a debounced job is due when its "
                                 "window closes.")
    ms = _window_ms(unique_for if unique_for is not None else debounce, what)
    if key is None:
        limit = queue.engine.config.max_record_bytes - 4096
        key = payload_key(encode_payload(data, limit=limit, queue=queue.name)[1])
    return Window("unique" if unique_for is not None else "debounce", ms, check_text(key, what="unique_key"))


def _window_ms(value: Any, what: str) -> int:
    ms = to_ms(cast("float | timedelta | None", value), what=what)
    if not ms:
        raise InvalidJob(f"{what} must be a positive number of seconds or a timedelta, got {value!r}.")
    if ms > MAX_WINDOW_S * 1000:
        raise InvalidJob(f"{what} must be at most {MAX_WINDOW_S:,} seconds (a year), got {value!r}.")
    return ms


def add_unique(queue: Any, data: Any, options: dict[str, Any], window: Window) -> Job:
    """The first job of ``window.key``'s open window, added now if there is none."""
    job = build_job(queue, data, **options)
    queue._resolve_dependencies([job])
    durable, namespace = queue.engine.durable, unique_namespace(queue.name)
    for _ in range(MAX_ROUNDS):
        now = now_ms()
        ends = now + window.ms
        record = {"key": window.key, "queue": queue.name, "jobId": job.id, "createdAt": now, "expiresAt": ends}
        if durable.insert_guarded(RecordWrite(namespace, window.key, record, ends),
                                  [RecordWrite(job.namespace, job.id, job.to_value())]):
            queue._register_dependents([job])
            queue._signal([job] if job.status in ("waiting", "delayed") else [])
            emit_now(queue, "enqueued", job)
            return job
        found = durable.get(namespace, window.key)
        if found is None:
            continue  # expired and deleted by a racer meanwhile: insert again
        first, expires = found.value.get("jobId"), found.value.get("expiresAt")
        if isinstance(first, str) and isinstance(expires, int) and expires > now_ms():
            return first_job(queue, first)
        # Only the racer whose delete matches this exact record removes it.
        durable.compare_and_set(namespace, window.key, expect={"jobId": first, "expiresAt": expires}, value=None)
    raise BackendUnavailable(f"Queue {queue.name!r}: the uniqueness window of {window.key!r} kept changing "
                             f"under {MAX_ROUNDS} attempts (clocks far apart?); nothing was added.")


def first_job(queue: Any, job_id: str) -> Job:
    """A window's first job: as stored (waiting, running or dead-lettered), else a
    :class:`GoneJob` with only its id."""
    durable = queue.engine.durable
    for namespace in (job_namespace(queue.name), dlq_namespace(queue.name)):
        record = durable.get(namespace, job_id)
        if record is not None:
            return Job.from_value(record.value)
    return GoneJob(id=job_id, queue=queue.name, data=None, status=cast(JobStatus, "completed"))
