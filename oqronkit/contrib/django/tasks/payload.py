"""The job payload of a task: the one place its JSON shape is written and read.

``{"task": "app.tasks.send", "args": [...], "kwargs": {...}, "enqueuedAt": <epoch ms>}``
(``args`` and ``kwargs`` left out when empty) plus, only where they differ from the
declared task's, ``"backend"``, ``"queueName"`` and ``"priority"``; ``"runAfter"``
(ISO 8601) when deferred, ``"options"`` when the task sets job options, ``"token"``
with a ``job_id``. A run's ``input`` is this payload, so a finished task is read back
from its runs after its job has left ``oqron_jobs``.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from django.tasks import Task
from django.utils.module_loading import import_string

from oqronkit.ids import new_id

from .task import JOB_OPTION_FIELDS


def build(task: Task[..., Any], args: list[Any], kwargs: dict[str, Any], *, backend: str, enqueued_ms: int,
          options: Mapping[str, Any]) -> dict[str, Any]:
    """The payload of one enqueue (``args``/``kwargs`` already JSON-normalised)."""
    data: dict[str, Any] = {"task": task.module_path, "enqueuedAt": enqueued_ms}
    if args:
        data["args"] = args
    if kwargs:
        data["kwargs"] = kwargs
    try:
        declared: Task[..., Any] | None = _task_at(task.module_path)
    except (ImportError, ValueError):  # not importable here: the worker will say so; keep every field
        declared = None
    # Only what differs from the declared task: every run stores the payload as its input.
    for key, name, value in _routing(task, backend):
        if declared is None or value != getattr(declared, name):
            data[key] = value
    if task.run_after is not None:
        data["runAfter"] = task.run_after.isoformat()
    if options:
        data["options"] = dict(options)
    if "job_id" in options:  # tells this enqueue's job from one already holding the id
        data["token"] = new_id()
    return data


def _routing(task: Task[..., Any], backend: str) -> tuple[tuple[str, str, Any], ...]:
    return (("backend", "backend", backend), ("queueName", "queue_name", task.queue_name),
            ("priority", "priority", task.priority))


def from_ms(ms: Any) -> datetime | None:
    """An aware UTC datetime from epoch milliseconds (None stays None)."""
    if not isinstance(ms, (int, float)) or isinstance(ms, bool):
        return None
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


@functools.lru_cache(maxsize=1024)
def _task_at(path: str) -> Task[..., Any]:
    task = import_string(path)
    if not isinstance(task, Task):
        raise ValueError(f"{path!r} does not point to a Task (got {type(task).__name__}).")
    return task


def task_of(data: Mapping[str, Any]) -> Task[..., Any]:
    """The task a payload was enqueued as: the module's Task with the payload's queue,
    priority, run_after, backend and job options. ImportError or ValueError when the
    path no longer names a Task."""
    task = _task_at(str(data["task"]))
    run_after = datetime.fromisoformat(data["runAfter"]) if data.get("runAfter") else None
    changes: dict[str, Any] = {}
    for name, value in (("queue_name", data.get("queueName", task.queue_name)),
                        ("priority", data.get("priority", task.priority)),
                        ("backend", data.get("backend", task.backend)), ("run_after", run_after)):
        if value != getattr(task, name):
            changes[name] = value
    for name, value in (data.get("options") or {}).items():
        if name in JOB_OPTION_FIELDS and hasattr(task, name) and value != getattr(task, name):
            changes[name] = value
    # replace() validates again (Task.__post_init__): skipped when nothing differs.
    return dataclasses.replace(task, **changes) if changes else task
