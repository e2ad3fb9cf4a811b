"""The pure half of the v1 migration: one ``oqron_kv`` row in, v2 writes out.

The layout and the mapping table are documented in :mod:`oqronkit.legacy`; every rule
lives in :func:`_rule_for` and the constants below, so the table and the code stay one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any, Final

from ..config import OqronConfig
from ..errors import ConfigurationError
from ..namespaces import (
    CRON,
    CRON_DURABLE,
    QUEUE,
    RUNS,
    SCHEDULE,
    SCHEDULE_DURABLE,
    WEBHOOK,
    WORKER,
    RecordKind,
    classify_namespace,
    dlq_namespace,
    job_namespace,
)
from ..queues.backoff import Backoff, BackoffValue
from ..queues.jobs import Job, JobValue
from ..queues.runs import ErrorValue

V1_PREFIX: Final = "oqron"
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_TIME_FIELDS: Final = (
    "createdAt", "startedAt", "finishedAt", "processedOn", "runAt", "queuedAt", "updatedAt",
    "nextRunAt", "lastRunAt", "pausedAt", "resumedAt",
)
# The fields of a v1 cron/schedule record that are its durable pointer and control state;
# the rest is the definition.
_POINTER_FIELDS: Final = (
    "nextRunAt", "lastRunAt", "paused", "pausedAt", "resumedAt", "runCount", "successCount",
    "failCount", "lastStatus", "lastDurationMs", "lastError", "lastRunId",
)
_HOT_ONLY: Final = frozenset({
    "cache_entries", "cache_tags", "cache_stats", "ratelimit_stats",
    "ratelimit:sliding", "ratelimit:fixed", "ratelimit:bucket", "ratelimit:bans",
    "ratelimit:violations", "ratelimit:warnings", "ratelimit:circuit",
})
_INSTANCES: Final = {"queue_instances": QUEUE, "worker_instances": WORKER, "webhook_instances": WEBHOOK}
_SCHEDULERS: Final = {"cron_schedules": (CRON, CRON_DURABLE), "schedule_schedules": (SCHEDULE, SCHEDULE_DURABLE)}
# v1 job status -> (what it becomes, the v2 job or run status) for queue-like jobs ...
_QUEUE_JOB: Final[dict[str, tuple[str, str]]] = {
    "waiting": ("job", "waiting"),
    "delayed": ("job", "delayed"),
    # v2 cannot re-link a v1 parent to its children: an operator decides (the board shows it).
    "waiting-children": ("job", "blocked"),
    # In flight or held in v1: the claim (or hold) died with the v1 process; run it again.
    "active": ("job", "waiting"),
    "running": ("job", "waiting"),
    "stalled": ("job", "waiting"),
    "paused": ("job", "waiting"),
    "failed": ("dlq", "dead"),
    "completed": ("run", "completed"),
    "cancelled": ("run", "cancelled"),
}
# ... and for cron/schedule fires, which v2 records as runs only.
_FIRE_RUN: Final[dict[str, str]] = {
    "completed": "completed", "failed": "failed", "cancelled": "cancelled",
    "running": "failed", "active": "failed", "stalled": "failed",
    "waiting": "held", "delayed": "held", "paused": "held",
}
_RUN_MODULE: Final = {"cron": "cron", "schedule": "schedule", "webhook": "webhook"}
DEAD_REASON: Final = "retries exhausted (migrated from v1)"
INTERRUPTED: Final = (
    "The v1 run was still in progress when the database was migrated; its outcome is unknown."
)


@dataclass(frozen=True, slots=True)
class LegacyRow:
    """One ``oqron_kv`` row as read from the database (value still JSON text or decoded)."""

    namespace: str
    id: str
    value: Any
    created_at: Any = None


@dataclass(frozen=True, slots=True)
class V2Write:
    """One record to insert into the v2 tables, with its scope."""

    project: str
    environment: str
    namespace: str
    id: str
    value: Mapping[str, Any]

    @property
    def kind(self) -> RecordKind:
        return classify_namespace(self.namespace)


@dataclass(frozen=True, slots=True)
class Mapped:
    """What one v1 row becomes: writes, or nothing and the reason."""

    writes: tuple[V2Write, ...] = ()
    skipped: str | None = None


class _Skip(Exception):
    """Internal: the row maps to nothing, for the reason given."""


# -- dates ---------------------------------------------------------------------------


def epoch_ms(value: Any) -> int | None:
    """A v1 time (epoch ms number, Date wrapper, ISO string or datetime) as epoch ms."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return int(value) if math.isfinite(value) else None
    if isinstance(value, dict) and value.get("__type") == "Date":
        return epoch_ms(value.get("__val"))
    if isinstance(value, datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=UTC)
        return (aware - _EPOCH) // timedelta(milliseconds=1)
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit():
            return int(text)
        try:
            return epoch_ms(datetime.fromisoformat(text))
        except ValueError:
            return None
    return None


def convert_dates(value: Any) -> Any:
    """``value`` with every Date wrapper, at any depth, replaced by epoch ms (a wrapper
    whose date cannot be parsed is kept as is, so no data is lost)."""
    if isinstance(value, dict):
        if value.get("__type") == "Date" and "__val" in value:
            ms = epoch_ms(value["__val"])
            return value if ms is None else ms
        return {k: convert_dates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [convert_dates(v) for v in value]
    return value


def _times_to_ms(value: dict[str, Any]) -> dict[str, Any]:
    """Top-level time fields that hold a bare ISO string (or a float) become epoch ms too."""
    out = dict(value)
    for name in _TIME_FIELDS:
        if out.get(name) is not None:
            ms = epoch_ms(out[name])
            if ms is not None:
                out[name] = ms
    return out


# -- namespaces and scopes -----------------------------------------------------------


def split_namespace(namespace: str, *, project: str, environment: str) -> tuple[str, str, str]:
    """``oqron:{project}:{environment}:{logical}`` → (project, environment, logical);
    a namespace without the prefix belongs to the given default scope."""
    parts = namespace.split(":", 3)
    if len(parts) == 4 and parts[0] == V1_PREFIX and all(parts[1:]):
        return parts[1], parts[2], parts[3]
    return project, environment, namespace


@lru_cache(maxsize=256)
def _scope_problem(project: str, environment: str) -> str | None:
    """Why (project, environment) cannot be a v2 scope, or None; the config object is
    the one place that knows the naming rule."""
    try:
        OqronConfig(mode="memory", database_url=None, project=project, environment=environment)
    except ConfigurationError:
        return "project or environment name is not valid in v2"
    return None


# -- the mapping ---------------------------------------------------------------------


def map_v1_row(
    row: LegacyRow, *, default_project: str, default_environment: str, migrated_at: int
) -> Mapped:
    """Map one v1 row to the v2 writes it becomes (see the module docstring's table).

    Pure: the same row and ``migrated_at`` always give the same writes."""
    project, environment, logical = split_namespace(
        row.namespace, project=default_project, environment=default_environment
    )
    try:
        problem = _scope_problem(project, environment)
        if problem:
            raise _Skip(problem)
        value = _decode(row.value)
        ctx = _Context(row, project, environment, migrated_at)
        writes = _rule_for(logical)(logical, row.id, value, ctx)
    except _Skip as skip:
        return Mapped(skipped=str(skip))
    return Mapped(writes=tuple(V2Write(project, environment, ns, id, v) for ns, id, v in writes))


@dataclass(frozen=True, slots=True)
class _Context:
    row: LegacyRow
    project: str
    environment: str
    migrated_at: int


_Out = list[tuple[str, str, Mapping[str, Any]]]
_Rule = Callable[[str, str, dict[str, Any], _Context], _Out]


def _rule_for(logical: str) -> _Rule:
    """The one dispatch table from a v1 logical namespace to its rule."""
    if logical == "jobs":
        return _map_job
    if logical in _SCHEDULERS:
        return _map_scheduler
    if logical in _INSTANCES:
        return _map_instance
    if logical in _HOT_ONLY:
        return _map_hot_only
    return _map_verbatim


def _decode(value: Any) -> dict[str, Any]:
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes(value).decode("utf-8")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise _Skip("value is not valid JSON") from exc
    if not isinstance(value, dict):
        raise _Skip("value is not a JSON object")
    converted: dict[str, Any] = convert_dates(value)
    return converted


def _map_verbatim(logical: str, id: str, value: dict[str, Any], ctx: _Context) -> _Out:
    return [(logical, id, value)]


def _map_hot_only(logical: str, id: str, value: dict[str, Any], ctx: _Context) -> _Out:
    raise _Skip(f"hot-only in v2 ({logical})")


def _map_instance(logical: str, id: str, value: dict[str, Any], ctx: _Context) -> _Out:
    out = {"name": id, **value}
    # v1 paused a queue/worker/webhook by setting enabled=false; v2 control state says paused.
    if "paused" not in out:
        out["paused"] = out.get("enabled") is False
    return [(_INSTANCES[logical], id, out)]


def _map_scheduler(logical: str, id: str, value: dict[str, Any], ctx: _Context) -> _Out:
    definition_ns, pointer_ns = _SCHEDULERS[logical]
    value = _times_to_ms(value)
    name = value.get("name") or id
    # The scheduler reads kind and name from every definition; v1 records lack the kind.
    definition = {**{k: v for k, v in value.items() if k not in _POINTER_FIELDS}, "kind": definition_ns, "name": name}
    pointer: dict[str, Any] = {"name": name, "nextRunAt": None, "lastRunAt": None, "paused": False,
                               **{k: value[k] for k in (*_POINTER_FIELDS, "version") if k in value}}
    return [(definition_ns, id, definition), (pointer_ns, id, {**_v2_control(definition_ns, pointer), **pointer})]


def _v2_control(kind: str, pointer: dict[str, Any]) -> dict[str, Any]:
    """The v2 control fields a v1 pointer lacks (a control write is a compare-and-set on ``rev``)."""
    runs = pointer.get("runCount") if type(pointer.get("runCount")) is int else 0
    return {"kind": kind, "version": 1, "rev": 0, "done": False, "lastSlotAt": None, "lastFiredAt":
            pointer.get("lastRunAt"), "lastRunId": pointer.get("lastRunId"), "backlog": [], "retries": [],
            "manual": [], "counters": {"missed": 0, "skipped": 0, "run": runs, "manual": 0}}


def _map_job(logical: str, id: str, value: dict[str, Any], ctx: _Context) -> _Out:
    job = _times_to_ms(value)
    if job.get("createdAt") is None:
        job["createdAt"] = epoch_ms(ctx.row.created_at)
    status = job.get("status")
    if job.get("type") in ("cron", "schedule"):
        if status not in _FIRE_RUN:
            raise _Skip(f"cron/schedule fire with unknown status {status!r}")
        return [(RUNS, id, _run(id, job, _FIRE_RUN[status], ctx))]
    if status not in _QUEUE_JOB:
        raise _Skip(f"job with unknown status {status!r}")
    queue = job.get("queueName") or job.get("moduleName")
    if not isinstance(queue, str) or not queue:
        raise _Skip("job has no queueName")
    outcome, new_status = _QUEUE_JOB[status]
    if outcome == "run":
        return [(RUNS, id, _run(id, job, new_status, ctx))]
    if outcome == "dlq":
        return [(dlq_namespace(queue), id, _v2_job(id, job, queue, "dead", ctx)),
                (RUNS, id, _run(id, job, "failed", ctx))]
    return [(job_namespace(queue), id, _v2_job(id, job, queue, new_status, ctx))]


def _v2_job(id: str, job: dict[str, Any], queue: str, status: str, ctx: _Context) -> JobValue:
    """The v2 work order (:class:`oqronkit.queues.jobs.Job`) for a v1 job record. v1 claim
    fields (worker, lease) are not carried over: the v1 claim died with the v1 worker."""
    opts = found if isinstance(found := job.get("opts"), dict) else {}
    run_at = _int(job.get("runAt"))
    if status == "delayed" and run_at is None:
        status = "waiting"  # no due time: waiting is the only state that still runs it
    error = _error(job, ctx)
    fields: dict[str, Any] = {
        "id": id, "queue": queue, "data": job.get("data"), "status": status,
        "priority": _int(opts.get("priority")) or 0, "lifo": opts.get("lifo") is True,
        "attempts": _int(job.get("attemptMade")) or 0,
        "run_at": run_at if status == "delayed" else None,
        "created_at": _int(job.get("createdAt")) or ctx.migrated_at, "updated_at": ctx.migrated_at,
        "last_error": error, "errors": [error] if error else [],
        "correlation_id": job.get("correlationId"), "tags": [str(t) for t in job.get("tags") or []],
    }
    max_attempts = _int(job.get("maxAttempts")) or _int(opts.get("attempts"))
    if max_attempts and max_attempts > 0:
        fields["max_attempts"] = max_attempts
    if isinstance(opts.get("backoff"), dict):
        fields["backoff"] = _backoff(opts["backoff"])
    if _int(opts.get("timeout")):
        fields["timeout_ms"] = _int(opts["timeout"])
    if status == "blocked":
        fields["blocked_by"] = [str(child) for child in job.get("childrenIds") or []]
    if status == "dead":
        fields["dead_reason"] = DEAD_REASON
        fields["died_at"] = _int(job.get("finishedAt")) or ctx.migrated_at
    return Job(**fields).to_value()


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return int(value)


def _backoff(v1: dict[str, Any]) -> BackoffValue:
    """v1 ``{type, delay(ms)}`` as the v2 stored backoff."""
    kind = found if (found := v1.get("type")) in ("fixed", "exponential") else "exponential"
    delay = _int(v1.get("delay"))
    return Backoff(kind).to_value() if delay is None else Backoff(kind, base_ms=delay).to_value()


def _error(job: dict[str, Any], ctx: _Context) -> ErrorValue | None:
    """The v1 error as v2 stores errors (``type``, ``message``, ``traceback``, ``ts``)."""
    error = job.get("error")
    stack = [str(line) for line in job.get("stacktrace") or []]
    kind = "Error"
    if isinstance(error, dict):
        kind = str(error.get("name") or kind)
        error = error.get("message") or json.dumps(error)
    if not error and stack:
        error = stack[-1]
    if not error:
        return None
    ts = _int(job.get("finishedAt")) or ctx.migrated_at
    return {"type": kind, "message": str(error), "traceback": "\n".join(stack), "ts": ts}


def _run(id: str, job: dict[str, Any], status: str, ctx: _Context) -> dict[str, Any]:
    """The spec's run record for the last attempt a v1 job record describes. (Not a
    RunValue: a v1 record may lack the name and worker every v2 run has.)"""
    # Runs are listed by startedAt, so a run must have one: fall back to the migration time.
    started = next((job[k] for k in ("startedAt", "processedOn", "createdAt", "finishedAt")
                    if isinstance(job.get(k), int)), ctx.migrated_at)
    ended = _int(job.get("finishedAt"))
    duration = _int(job.get("durationMs"))
    if duration is None and ended is not None:
        duration = max(ended - started, 0)
    module = _RUN_MODULE.get(str(job.get("type")), "queue")
    name = (job.get("scheduleId") or job.get("moduleName")) if module in ("cron", "schedule") else None
    error = _error(job, ctx) if status == "failed" else None
    if status == "failed" and job.get("status") in ("running", "active", "stalled"):
        error = {"type": "Interrupted", "message": INTERRUPTED, "traceback": "", "ts": ctx.migrated_at}
    return {
        "id": id, "jobId": id, "name": name or job.get("queueName") or job.get("moduleName"),
        "module": module, "status": status, "trigger": job.get("triggeredBy") or module,
        "input": job.get("data"), "output": job.get("returnValue") if status == "completed" else None,
        "attempts": _int(job.get("attemptMade")) or 1,
        "progressPercent": 100 if status == "completed" else _int(job.get("progressPercent")) or 0,
        "logs": job.get("logs") or [], "timeline": job.get("timeline") or [], "error": error,
        "app": ctx.project, "environment": ctx.environment,
        "workerId": job.get("workerId"), "startedAt": started, "endedAt": ended,
        "durationMs": duration,
    }
