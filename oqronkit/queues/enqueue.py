"""Building job records from ``add`` arguments: validation and dependencies.

Kept apart from :mod:`oqronkit.queues.queue` so the rules for a valid job are in one place.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from ..backends.hot_types import MAX_PRIORITY, MIN_PRIORITY
from ..bounds import MAX_ATTEMPTS, MAX_EPOCH_MS
from ..clock import now_ms
from ..codec import (
    MAX_JSON_DEPTH,
    NestingTooDeep,
    check_text,
    dumps_compact,
    encode_value,
    read_back,
    storage_problem,
    utf8_size,
)
from ..correlation import current as current_correlation
from ..errors import InvalidJob
from ..ids import ascending_ids_at, new_id
from ..telemetry.tracing import current_trace_context
from .backoff import make_backoff, to_ms
from .jobs import PARENT_FAILURE_POLICIES, Job, ParentFailure


def check_priority(priority: Any) -> int:
    if not isinstance(priority, int) or isinstance(priority, bool) or not MIN_PRIORITY <= priority <= MAX_PRIORITY:
        raise InvalidJob(f"priority must be an integer from {MIN_PRIORITY} to {MAX_PRIORITY}, got {priority!r}.")
    return priority


def payload_limit(queue: Any) -> int:
    """The most bytes of JSON a payload of ``queue`` may take (the rest of its record's room
    is for the job's own fields and errors)."""
    return int(queue.engine.config.max_record_bytes) - 4096


def check_payload(data: Any, *, limit: int, queue: str) -> Any:
    """Refuse payloads that are not JSON-serialisable or too large, at ``add`` time."""
    return encode_payload(data, limit=limit, queue=queue)[1]


# A job record (and a run record) holds the payload one level down: it may nest one
# level less than any stored value.
MAX_PAYLOAD_DEPTH = MAX_JSON_DEPTH - 1


def encode_payload(data: Any, *, limit: int, queue: str) -> tuple[str, Any]:
    """The payload's JSON text and the value a worker will read back from it; refuses
    payloads that are not JSON-serialisable, too large, nested too deep, or hold what
    no durable plane stores alike (NUL, a lone surrogate)."""
    too_deep = f"the value nests deeper than {MAX_PAYLOAD_DEPTH} levels"
    try:
        text = dumps_compact(data)
    except NestingTooDeep as exc:
        raise InvalidJob(f"Queue {queue!r}: the job payload cannot be stored: {too_deep} or refers to itself "
                         "(nesting too deep for JSON).") from exc
    except (TypeError, ValueError) as exc:
        raise InvalidJob(f"Queue {queue!r}: the job payload is not JSON-serialisable ({exc}).") from exc
    problem = storage_problem(text, max_depth=MAX_PAYLOAD_DEPTH)
    if problem is not None:
        raise InvalidJob(f"Queue {queue!r}: the job payload cannot be stored: {problem}.")
    size = utf8_size(text)
    if size > limit:
        raise InvalidJob(
            f"Queue {queue!r}: the job payload is {size:,} bytes of JSON, over the {limit:,}-byte "
            "limit (OQRON max_record_bytes). Store large data elsewhere and pass a reference."
        )
    return text, read_back(data, text)  # the job holds exactly what a worker will read back


def check_attempts(attempts: Any) -> int:
    if not isinstance(attempts, int) or isinstance(attempts, bool) or not 1 <= attempts <= MAX_ATTEMPTS:
        raise InvalidJob(f"attempts must be an integer from 1 to {MAX_ATTEMPTS}, got {attempts!r}.")
    return attempts


def check_timeout(timeout: Any) -> int | None:
    """A timeout in ms (at least 1: a positive timeout never rounds down to "none")."""
    ms = to_ms(timeout, what="timeout")
    if ms is None:
        return None
    if not timeout:  # 0, 0.0 and timedelta(0) alike
        raise InvalidJob(f"timeout must be positive (seconds or a timedelta), got {timeout!r}.")
    return max(ms, 1)


def plain_job_rows(queue: Any, payloads: Sequence[Any], jobs: list[Job]) -> Iterator[tuple[str, str]]:
    """Record rows ``(id, JSON)`` of jobs for payloads added with no per-job option (the
    common ``add_bulk``), validated like :func:`build_job`, with the constant part of
    the record encoded once per batch instead of once per job.

    Lazy on purpose: each job is appended to ``jobs`` as its row is produced, so the
    durable write can stream rows to the database while later ones are still being
    built (on Postgres the server then inserts on the other core meanwhile)."""
    first = build_job(queue, payloads[0])
    shared: dict[str, Any] = dict(first.to_value())  # not a JobValue once id and data are cut
    del shared["id"], shared["data"]
    # '"queue":"q","status":"waiting",...' without braces: every job of the batch has it.
    middle = encode_value(shared, limit=1 << 62, what="job")[1:-1]
    limit = payload_limit(queue)
    fields = {name: getattr(first, name) for name in _PLAIN_FIELDS}
    next_id = ascending_ids_at(first.created_at)  # the batch's rows enter the id index at one place
    for index, payload in enumerate(payloads):
        if index == 0:
            job = first
            text = encode_payload(payload, limit=limit, queue=queue.name)[0]
        else:
            text, data = encode_payload(payload, limit=limit, queue=queue.name)
            job = Job(id=next_id(), data=data, tags=list(first.tags), **fields)
        jobs.append(job)
        yield job.id, f'{{"id":"{job.id}",{middle},"data":{text}}}'  # both id makers write plain hex


# Job fields a plain job copies from the batch's first job (lists are made afresh).
_PLAIN_FIELDS = ("queue", "status", "priority", "lifo", "max_attempts", "backoff", "run_at", "created_at",
                 "updated_at", "parent_failure", "timeout_ms", "trace_context", "correlation_id", "caused_by")


def parent_ref(parent: Any, default_queue: str) -> list[str]:
    """A dependency given as a Job, ``(queue, id)`` or a job id of the same queue."""
    if isinstance(parent, Job):
        return [parent.queue, parent.id]
    if isinstance(parent, str) and parent:
        return [default_queue, check_text(parent, what="depends_on job id")]
    if isinstance(parent, (tuple, list)) and len(parent) == 2 and all(isinstance(p, str) and p for p in parent):
        return [check_text(parent[0], what="depends_on queue"), check_text(parent[1], what="depends_on job id")]
    raise InvalidJob(f"depends_on entries must be Jobs, job ids or (queue, id) pairs, got {parent!r}.")


def run_at_from(delay: Any, run_at: Any, now: int) -> int | None:
    """The due time in epoch ms (None: now); both forms bounded so every plane can
    store it (from the epoch to the year 10000)."""
    if delay is not None and run_at is not None:
        raise InvalidJob("Pass either delay or run_at, not both.")
    if run_at is not None:
        if isinstance(run_at, datetime):
            if run_at.tzinfo is None:
                raise InvalidJob("run_at must be timezone-aware (e.g. datetime.now(timezone.utc)).")
            ms = int(run_at.timestamp() * 1000)
        elif isinstance(run_at, int) and not isinstance(run_at, bool):
            ms = run_at
        else:
            raise InvalidJob(f"run_at must be an aware datetime or epoch milliseconds, got {run_at!r}.")
        if not 0 <= ms < MAX_EPOCH_MS:
            raise InvalidJob(f"run_at must be from 1970 to the year 9999 (epoch ms 0 to {MAX_EPOCH_MS - 1:,}), "
                             f"got {run_at!r}.")
        return ms
    delay_ms = to_ms(delay, what="delay")
    return now + delay_ms if delay_ms else None


def build_job(
    queue: Any,
    data: Any,
    *,
    job_id: str | None = None,
    delay: float | timedelta | None = None,
    run_at: datetime | int | None = None,
    priority: int | None = None,
    attempts: int | None = None,
    backoff: Any = None,
    depends_on: Iterable[Any] = (),
    parent_failure: ParentFailure = "block",
    correlation_id: str | None = None,
    tags: Sequence[str] = (),
    timeout: float | timedelta | None = None,
    payload_checked: bool = False,
) -> Job:
    """A validated job for ``queue`` (not yet stored). ``payload_checked``: ``data`` is
    the value :func:`encode_payload` returned (the caller keeps its text to store)."""
    name = queue.name
    if job_id is not None:
        check_text(job_id, what="job_id")
    carried, caused_by = current_correlation(), None
    if correlation_id is not None:
        check_text(correlation_id, what="correlation_id")
        if carried is not None and carried[0] == correlation_id:
            caused_by = carried[1]
    elif carried is not None:
        correlation_id, caused_by = carried
    if parent_failure not in PARENT_FAILURE_POLICIES:
        raise InvalidJob(f"parent_failure must be one of {PARENT_FAILURE_POLICIES}, got {parent_failure!r}.")
    max_attempts = check_attempts(attempts) if attempts is not None else queue.retries + 1
    if not isinstance(tags, (list, tuple)):
        raise InvalidJob(f"tags must be a list of strings, got {tags!r}.")
    for tag in tags:
        check_text(tag, what="a tag")
    now = now_ms()
    due = run_at_from(delay, run_at, now)
    parents = [parent_ref(p, name) for p in depends_on]
    job = Job(
        id=job_id or new_id(),
        queue=name,
        data=data if payload_checked else check_payload(data, limit=payload_limit(queue), queue=name),
        status="delayed" if due is not None and due > now else "waiting",
        priority=check_priority(queue.priority if priority is None else priority),
        lifo=queue.strategy == "lifo",
        max_attempts=max_attempts,
        backoff=(make_backoff(backoff) if backoff is not None else queue.backoff).to_value(),
        run_at=due,
        created_at=now,
        updated_at=now,
        depends_on=parents,
        pending=list(parents),
        parent_failure=parent_failure,
        correlation_id=correlation_id,
        caused_by=caused_by,
        tags=sorted(set(queue.tags) | set(tags)),
        timeout_ms=check_timeout(timeout) if timeout is not None else queue.timeout_ms,
        trace_context=current_trace_context(),
    )
    if [name, job.id] in parents:
        raise InvalidJob(f"Job {job.id!r} cannot depend on itself.")
    return job


def reject_cycles(jobs: Sequence[Job]) -> None:
    """Within one batch, refuse dependency cycles (jobs outside the batch already
    exist, and an existing job can never depend on one not yet added)."""
    edges: dict[tuple[str, str], list[tuple[str, str]]] = {
        (j.queue, j.id): [(p[0], p[1]) for p in j.depends_on] for j in jobs
    }
    state: dict[tuple[str, str], int] = {}

    def visit(node: tuple[str, str], path: list[tuple[str, str]]) -> None:
        if state.get(node) == 2 or node not in edges:
            return
        if state.get(node) == 1:
            cycle = " -> ".join(f"{q}/{i}" for q, i in [*path[path.index(node):], node])
            raise InvalidJob(f"Dependency cycle rejected: {cycle}.")
        state[node] = 1
        for parent in edges[node]:
            visit(parent, [*path, node])
        state[node] = 2

    for node in edges:
        visit(node, [])


def options_from(item: Any) -> tuple[Any, Mapping[str, Any]]:
    """An ``add_bulk`` item: a payload, or ``{"data": ..., **options}`` with a data key."""
    if isinstance(item, Mapping) and "data" in item and set(item) - {"data"} <= BULK_OPTIONS:
        options = dict(item)
        return options.pop("data"), options
    return item, {}


BULK_OPTIONS = frozenset({
    "job_id", "delay", "run_at", "priority", "attempts", "backoff", "depends_on", "parent_failure",
    "correlation_id", "tags", "timeout", "unique_for", "unique_key", "debounce",
})
