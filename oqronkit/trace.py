"""One correlation id's timeline: every job, run, message, log line and audit entry that
carries it, in time order, nested by cause.

Read with one index-served query per durable table (the ``oqron_*_correlation_idx``
indexes), never a scan. Nesting: a run under its job, a job or message under the run
whose handler made it (``causedBy``), a topic delivery under its message, a log line
under its run, an operator's audit entry under its job. An entry whose cause is not in
the trace (pruned, or from before the id) is a root.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .durable import MAX_PAGE, DurablePlane
from .namespaces import DLQ_PREFIX, JOB_PREFIX, TOPIC_MSG_PREFIX, module_of_logs, queue_of

EntryKind = Literal["job", "dead", "run", "message", "log", "audit"]
#: The most entries one trace reads (per table); the trace says when it stopped there.
DEFAULT_LIMIT = 5000


@dataclass(slots=True)
class TraceEntry:
    """One row of a timeline. ``key`` is unique in the trace; ``parent`` the key of its
    cause; ``depth`` its nesting level; ``ref`` what its own page needs (queue, ids)."""

    kind: EntryKind
    key: str
    id: str
    at: int
    title: str
    status: str | None = None
    ended_at: int | None = None
    duration_ms: int | None = None
    parent: str | None = None
    depth: int = 0
    ref: dict[str, str] = field(default_factory=dict)
    #: The cause to hang it under when ``parent`` is not in the trace (a done job is deleted).
    fallback: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "key": self.key, "id": self.id, "at": self.at, "title": self.title,
                "status": self.status, "endedAt": self.ended_at, "durationMs": self.duration_ms,
                "parent": self.parent, "depth": self.depth, "ref": self.ref}


@dataclass(slots=True)
class Trace:
    """A correlation id's entries, depth first (each sibling list in time order)."""

    correlation_id: str
    entries: list[TraceEntry]
    truncated: bool

    @property
    def started_at(self) -> int | None:
        return min((e.at for e in self.entries), default=None)

    @property
    def ended_at(self) -> int | None:
        return max((e.ended_at or e.at for e in self.entries), default=None)

    def to_json(self) -> dict[str, Any]:
        return {"correlationId": self.correlation_id, "startedAt": self.started_at, "endedAt": self.ended_at,
                "truncated": self.truncated, "entries": [e.to_json() for e in self.entries]}


def read_trace(durable: DurablePlane, correlation_id: str, *, limit: int = DEFAULT_LIMIT) -> Trace:
    """The timeline of ``correlation_id`` in ``durable``'s scope, at most ``limit``
    rows per table."""
    entries: list[TraceEntry] = []
    truncated = False
    for table in ("jobs", "runs", "records"):
        cursor, read = None, 0
        while True:
            page = durable.list(table=table, correlation=correlation_id, limit=min(MAX_PAGE, limit - read),
                                cursor=cursor)
            read += len(page.records)
            for record in page.records:
                entry = _entry(record.namespace, record.id, record.value, record.inserted_at)
                if entry is not None:
                    entries.append(entry)
            cursor = page.next_cursor
            if cursor is None:
                break
            if read >= limit:
                truncated = True
                break
    return Trace(correlation_id, _nested(entries), truncated)


def _entry(namespace: str, id: str, value: Mapping[str, Any], inserted_at: int) -> TraceEntry | None:
    if namespace.startswith((JOB_PREFIX, DLQ_PREFIX)):
        return _job(namespace, id, value, inserted_at)
    if namespace == "runs":
        return _run(id, value, inserted_at)
    if namespace.startswith(TOPIC_MSG_PREFIX):
        topic = namespace[len(TOPIC_MSG_PREFIX):]
        return TraceEntry("message", f"message:{id}", id, _ms(value.get("publishedAt"), inserted_at), topic,
                          parent=_run_key(value.get("causedBy")), ref={"topic": topic})
    module = module_of_logs(namespace)
    if module is not None:
        return TraceEntry("log", f"log:{namespace}:{id}", id, _ms(value.get("at"), inserted_at),
                          str(value.get("message", "")), status=_text(value.get("level")),
                          parent=_run_key(value.get("runId")), ref={"module": module})
    target = value.get("target")
    if isinstance(target, list) and len(target) == 2 and all(isinstance(t, str) for t in target):
        return TraceEntry("audit", f"audit:{namespace}", id, _ms(value.get("at"), inserted_at),
                          f"{value.get('action')} by {value.get('user')}", status="ok" if value.get("ok") else "failed",
                          parent=f"job:{target[0]}/{target[1]}", ref={"queue": target[0], "job": target[1]})
    return None


def _job(namespace: str, id: str, value: Mapping[str, Any], inserted_at: int) -> TraceEntry:
    queue = queue_of(namespace) or namespace
    dead = namespace.startswith(DLQ_PREFIX)
    data = value.get("data")
    parent = _run_key(value.get("causedBy"))
    if parent is None and isinstance(data, Mapping) and isinstance(data.get("messageId"), str) and "topic" in data:
        parent = f"message:{data['messageId']}"  # a topic delivery, under its message
    created = _ms(value.get("createdAt"), inserted_at)
    ended = _ms(value.get("diedAt"), 0) or None if dead else None
    return TraceEntry("dead" if dead else "job", f"job:{queue}/{id}", id, created, queue,
                      status=_text(value.get("status")), ended_at=ended,
                      duration_ms=None if ended is None else max(0, ended - created), parent=parent,
                      ref={"queue": queue, "job": id})


def _run(id: str, value: Mapping[str, Any], inserted_at: int) -> TraceEntry:
    name = str(value.get("name", ""))
    job_id = value.get("jobId")
    ended = value.get("endedAt")
    duration = value.get("durationMs")
    data = value.get("input")
    fallback = _run_key(value.get("causedBy"))
    if fallback is None and isinstance(data, Mapping) and isinstance(data.get("messageId"), str) and "topic" in data:
        fallback = f"message:{data['messageId']}"  # a topic delivery's attempt, its job gone
    return TraceEntry("run", f"run:{id}", id, _ms(value.get("startedAt"), inserted_at), name,
                      status=_text(value.get("status")), ended_at=ended if isinstance(ended, int) else None,
                      duration_ms=duration if isinstance(duration, int) else None,
                      parent=f"job:{name}/{job_id}" if isinstance(job_id, str) else None,
                      ref={"module": str(value.get("module", ""))}, fallback=fallback)


def _nested(entries: list[TraceEntry]) -> list[TraceEntry]:
    """Depth first from the roots; siblings in time order. A run whose job row is gone
    (done jobs are deleted) hangs where the job would: under the job's cause, found
    through a sibling attempt's job row, else at the root."""
    keys = {e.key for e in entries}
    children: dict[str | None, list[TraceEntry]] = {}
    for e in entries:
        if e.parent is not None and e.parent not in keys:
            e.parent = e.fallback if e.fallback in keys else None
        children.setdefault(e.parent, []).append(e)
    for siblings in children.values():
        siblings.sort(key=lambda e: (e.at, e.key))
    ordered: list[TraceEntry] = []
    stack = [(e, 0) for e in reversed(children.get(None, []))]
    while stack:
        entry, depth = stack.pop()
        entry.depth = depth
        ordered.append(entry)
        stack += [(c, depth + 1) for c in reversed(children.get(entry.key, []))]
    return ordered


def _run_key(run_id: Any) -> str | None:
    return f"run:{run_id}" if isinstance(run_id, str) else None


def _ms(value: Any, default: int) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
