"""The job record: the work order stored in ``queue_job:<queue>`` (and, once dead, in
``queue_dlq:<queue>``), with the spec's camelCase JSON keys."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal, TypedDict, cast

from ..backends.hot_types import MAX_PRIORITY, MIN_PRIORITY, Signal
from ..bounds import MAX_EPOCH_MS
from ..codec import jsonb_key_order
from ..namespaces import JOB_PREFIX, dlq_namespace
from .backoff import BackoffValue
from .runs import ErrorValue
from .shedding import trim_error

JobStatus = Literal["waiting", "delayed", "active", "waiting-dependencies", "blocked", "dead"]
ParentFailure = Literal["block", "cascade-fail", "ignore"]
PARENT_FAILURE_POLICIES = ("block", "cascade-fail", "ignore")
MAX_ERRORS_KEPT = 25

_CAMEL = {
    "max_attempts": "maxAttempts", "run_at": "runAt", "created_at": "createdAt",
    "updated_at": "updatedAt", "lease_token": "leaseToken", "worker_id": "workerId",
    "last_error": "lastError", "depends_on": "dependsOn", "parent_failure": "parentFailure",
    "pending": "pendingDependencies", "dependents": "dependents", "correlation_id": "correlationId",
    "timeout_ms": "timeoutMs", "cancel_requested": "cancelRequested", "dead_reason": "deadReason",
    "died_at": "diedAt", "run_id": "currentRunId", "error_fingerprint": "errorFingerprint",
    "started_at": "startedAt", "blocked_by": "blockedBy", "stalled_token": "stalledToken",
    "group": "groupId", "trace_context": "traceContext", "caused_by": "causedBy", "replay_of": "replayOf",
    "replay_set": "replaySet",
}


class JobValue(TypedDict):
    """A job record as stored (:meth:`Job.to_value`): every field of :class:`Job` under
    its camelCase key. Rows read back may lack keys; :meth:`Job.from_value` reads those."""

    id: str
    queue: str
    data: Any
    status: JobStatus
    priority: int
    lifo: bool
    attempts: int
    maxAttempts: int
    backoff: BackoffValue | None
    runAt: int | None
    createdAt: int
    updatedAt: int
    startedAt: int | None
    leaseToken: int | None
    workerId: str | None
    currentRunId: str | None
    stalls: int
    stalledToken: int | None
    lastError: ErrorValue | None
    errors: list[ErrorValue]
    dependsOn: list[list[str]]
    pendingDependencies: list[list[str]]
    dependents: list[list[str]]
    parentFailure: ParentFailure
    blockedBy: list[str] | None
    correlationId: str | None
    tags: list[str]
    timeoutMs: int | None
    cancelRequested: bool
    deadReason: str | None
    diedAt: int | None
    errorFingerprint: str | None
    groupId: str | None
    traceContext: dict[str, str] | None
    causedBy: str | None
    replayOf: str | None
    replaySet: str | None


@dataclass(slots=True, kw_only=True)
class Job:
    """A durable work order. ``attempts`` counts attempts started so far."""

    id: str
    queue: str
    data: Any
    status: JobStatus = "waiting"
    priority: int = 0
    lifo: bool = False
    attempts: int = 0
    max_attempts: int = 4
    backoff: BackoffValue | None = None
    run_at: int | None = None
    created_at: int = 0
    updated_at: int = 0
    started_at: int | None = None
    lease_token: int | None = None
    worker_id: str | None = None
    run_id: str | None = None
    stalls: int = 0
    # The lease token of the last stall counted: one claim never counts two stalls.
    stalled_token: int | None = None
    last_error: ErrorValue | None = None
    errors: list[ErrorValue] = field(default_factory=list)
    depends_on: list[list[str]] = field(default_factory=list)  # [[queue, id], ...]
    pending: list[list[str]] = field(default_factory=list)
    dependents: list[list[str]] = field(default_factory=list)
    parent_failure: ParentFailure = "block"
    blocked_by: list[str] | None = None
    correlation_id: str | None = None
    tags: list[str] = field(default_factory=list)
    timeout_ms: int | None = None
    cancel_requested: bool = False
    dead_reason: str | None = None
    died_at: int | None = None
    error_fingerprint: str | None = None
    # The group (oqronkit.groups.ledger) this job is a member or a callback of.
    group: str | None = None
    # The W3C trace context the job was added in ({"traceparent": ...}): telemetry/tracing.py.
    trace_context: dict[str, str] | None = None
    # The run whose handler added this job (with its correlation id): the trace's nesting.
    caused_by: str | None = None
    # A replay's original run and its replay set (oqronkit.replay): ctx.replay reads it.
    replay_of: str | None = None
    replay_set: str | None = None

    @property
    def namespace(self) -> str:
        # job_namespace's prefix inlined: read twice per job on the worker's path
        return dlq_namespace(self.queue) if self.status == "dead" else JOB_PREFIX + self.queue

    def to_value(self) -> JobValue:
        # Hot path (every add and every claim): a precomputed key list, not fields().
        return cast(JobValue, {key: getattr(self, name) for name, key in _KEYS})

    @classmethod
    def from_value(cls, value: Mapping[str, Any]) -> Job:
        if tuple(value) == _STORED_KEYS:  # a row the engine wrote (every key, jsonb's order): pairs in C
            return cls(**dict(zip(_STORED_NAMES, value.values(), strict=True)))
        names = _NAME_FOR_KEY
        return cls(**{names[key]: item for key, item in value.items() if key in names})

    def die(self, reason: str, now: int) -> None:
        """Mark the job dead (for its dead-letter namespace) with a fingerprint that
        groups failures of the same kind on the board."""
        self.status, self.dead_reason, self.died_at = "dead", reason, now
        self.lease_token = self.worker_id = None
        error = self.last_error or {"type": "DeadLetter", "message": reason}
        self.error_fingerprint = error_fingerprint(str(error.get("type", "")), str(error.get("message", "")))

    def record_error(self, error: ErrorValue) -> None:
        """Keep the last error and a bounded list of every attempt's error."""
        self.last_error = error
        self.errors.append(error)
        del self.errors[:-MAX_ERRORS_KEPT]


def job_signal(job: Job) -> Signal:
    """The hot-plane signal of a stored job. ValueError for a row no hot plane can take
    (written past ``add``'s checks: by hand, by an older version): the leader's services
    skip such a row instead of failing their whole pass on it."""
    if not isinstance(job.id, str) or not job.id:
        raise ValueError(f"the job id {job.id!r} is not a non-empty string")
    if not isinstance(job.priority, int) or isinstance(job.priority, bool) \
            or not MIN_PRIORITY <= job.priority <= MAX_PRIORITY:
        raise ValueError(f"priority {job.priority!r} is not an integer from {MIN_PRIORITY} to {MAX_PRIORITY}")
    if job.run_at is not None and (not isinstance(job.run_at, int) or isinstance(job.run_at, bool)
                                   or not -MAX_EPOCH_MS < job.run_at < MAX_EPOCH_MS):
        raise ValueError(f"runAt {job.run_at!r} is not epoch milliseconds before the year 10000")
    return Signal(job.id, job.priority, job.run_at, bool(job.lifo))


def shed_error_detail(value: JobValue, _problem: str = "") -> Iterator[JobValue]:
    """Copies of a job record with less and less error detail, for one over the record
    size limit (a payload near it, and tracebacks of up to 8,000 characters per
    attempt): tracebacks dropped but the last error's; then messages cut to 500
    characters and that traceback to 2,000; then only the last three errors; then only
    the last, without traceback, its message cut to 200 (a few hundred bytes: payloads
    are held 4,096 bytes under the limit). The payload and the job's state are never
    touched. (A shedding.Shed.)"""
    errors = value.get("errors") if isinstance(value.get("errors"), list) else []
    last = value.get("lastError")
    for message, traceback, kept in ((None, 8000, len(errors)), (500, 2000, len(errors)), (500, 2000, 3),
                                     (200, None, 1)):
        yield {**value, "lastError": trim_error(last, message=message, traceback=traceback),
               "errors": [trim_error(e, message=message, traceback=None) for e in errors[-kept:]]}


# In jsonb's storage order (codec.jsonb_key_order), so Postgres need not sort them.
_KEYS: tuple[tuple[str, str], ...] = tuple(sorted(
    ((f.name, _CAMEL.get(f.name, f.name)) for f in fields(Job)), key=lambda pair: jsonb_key_order(pair[1])))
_NAME_FOR_KEY: dict[str, str] = {key: name for name, key in _KEYS}
_STORED_KEYS: tuple[str, ...] = tuple(key for _, key in _KEYS)
_STORED_NAMES: tuple[str, ...] = tuple(name for name, _ in _KEYS)

_VOLATILE = [
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I), "<uuid>"),
    (re.compile(r"'[^']*'|\"[^\"]*\""), "<str>"),
    # Any word holding a digit is an id, a count or a time: 42, cus_9fA2, 0x1f, 12.5ms.
    (re.compile(r"[\w.-]*\d[\w.-]*"), "<n>"),
]


def normalise_message(message: str) -> str:
    """An error message with ids, numbers and quoted values replaced by placeholders,
    so "user 42 not found" and "user 7 not found" group together."""
    for pattern, placeholder in _VOLATILE:
        message = pattern.sub(placeholder, message)
    return " ".join(message.split())[:300]


def error_fingerprint(kind: str, message: str) -> str:
    """Exception type plus normalised message, hashed to a short stable key."""
    return hashlib.sha1(f"{kind}\n{normalise_message(message)}".encode()).hexdigest()[:16]
