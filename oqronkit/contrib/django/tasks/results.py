"""``get_result``: a task's ``TaskResult`` read from its job and its runs.

The result id is the job id. Two indexed reads on the alias holding the engine's tables
(``sql/results.sql``): the job (waiting, running or dead-lettered) by primary key in the
backend's queues, and its runs (one per attempt) by the ``jobId`` index. A completed job
has left ``oqron_jobs``: its completed run then holds the answer, its ``input`` the payload.
"""

from __future__ import annotations

import builtins
import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from django.db import connections
from django.tasks import Task, TaskResult, TaskResultStatus
from django.tasks.base import TaskError
from django.tasks.exceptions import TaskResultDoesNotExist

from oqronkit.backends.sqlfiles import load_queries
from oqronkit.codec import decode_json
from oqronkit.namespaces import dlq_namespace, job_namespace

from .. import engine
from . import payload

# A job holds at most 1,000 attempts (oqronkit.bounds.MAX_ATTEMPTS): one run each.
MAX_RUNS = 1000
# The run field where the dispatcher records the exception's full class path.
EXCEPTION_PATH_KEY = "exceptionClassPath"
QUERIES = load_queries("oqronkit.contrib.django", "sql/results.sql")


def read_result(result_id: str, queues: Sequence[str]) -> TaskResult[..., Any]:
    """The result of task ``result_id`` among the oqronkit ``queues`` (TaskResultDoesNotExist)."""
    namespaces = [ns for q in queues for ns in (job_namespace(q), dlq_namespace(q))]
    found = _rows("job", json.dumps(namespaces), result_id)
    namespace, job = (found[0][0], decode_json(found[0][1])) if found else (None, None)
    runs = runs_of(result_id)
    data = job.get("data") if job is not None else next(
        (r.get("input") for r in reversed(runs) if isinstance(r.get("input"), Mapping)), None)
    if not isinstance(data, Mapping) or "task" not in data:
        raise TaskResultDoesNotExist(result_id)
    dead = namespace is not None and namespace.startswith("queue_dlq:")
    return build_result(result_id, data, job, runs, dead=dead)


def runs_of(result_id: str) -> list[dict[str, Any]]:
    """The runs of job ``result_id``, oldest first (the jobId index)."""
    return [decode_json(value) for (value,) in _rows("runs", result_id, MAX_RUNS)]


def _rows(query: str, *params: Any) -> list[tuple[Any, ...]]:
    config = engine.get_config()
    connection = connections[engine.database_alias()]
    dialect = "pg" if connection.vendor == "postgresql" else "sqlite"
    with connection.cursor() as cursor:
        cursor.execute(QUERIES[f"{dialect}_{query}"], [config.project, config.environment, *params])
        return list(cursor.fetchall())


def build_result(result_id: str, data: Mapping[str, Any], job: Mapping[str, Any] | None,
                 runs: Sequence[Mapping[str, Any]], *, dead: bool) -> TaskResult[..., Any]:
    """A ``TaskResult`` from a payload, the job (None once completed) and its runs, oldest first."""
    status = _status(job, runs, dead=dead)
    last = runs[-1] if runs else None
    finished = None
    if status in (TaskResultStatus.SUCCESSFUL, TaskResultStatus.FAILED):
        finished = payload.from_ms((last or {}).get("endedAt") or (job or {}).get("diedAt"))
    task = payload.task_of(data)
    result: TaskResult[..., Any] = TaskResult(
        task=task, id=result_id, status=status,
        enqueued_at=payload.from_ms(data.get("enqueuedAt")),
        started_at=payload.from_ms(runs[0].get("startedAt")) if runs else None,
        finished_at=finished,
        last_attempted_at=payload.from_ms(last.get("startedAt")) if last else None,
        args=list(data.get("args") or []), kwargs=dict(data.get("kwargs") or {}),
        backend=task.backend, errors=task_errors(runs),
        worker_ids=[str(r.get("workerId")) for r in runs],
    )
    if status == TaskResultStatus.SUCCESSFUL and last is not None:
        object.__setattr__(result, "_return_value", last.get("output"))
    return result


def _status(job: Mapping[str, Any] | None, runs: Sequence[Mapping[str, Any]], *, dead: bool) -> TaskResultStatus:
    last = runs[-1] if runs else None
    if dead:
        return TaskResultStatus.FAILED
    if last is not None and last.get("status") == "running":
        return TaskResultStatus.RUNNING  # a job finishing leaves oqron_jobs before its run is rewritten
    if job is not None:
        return TaskResultStatus.RUNNING if job.get("status") == "active" else TaskResultStatus.READY
    if last is not None and last.get("status") == "completed":
        return TaskResultStatus.SUCCESSFUL
    return TaskResultStatus.FAILED  # its dead letter was deleted: the runs are what is left


def task_errors(runs: Sequence[Mapping[str, Any]]) -> list[TaskError]:
    """One ``TaskError`` per failed run, oldest first."""
    errors = []
    for run in runs:
        error = run.get("error")
        if run.get("status") != "failed" or not isinstance(error, Mapping):
            continue
        path = run.get(EXCEPTION_PATH_KEY) or _qualified(str(error.get("type") or "Exception"))
        errors.append(TaskError(exception_class_path=str(path), traceback=str(error.get("traceback") or "")))
    return errors


def _qualified(name: str) -> str:
    """A bare exception name the engine stored (``ValueError``) as an import path."""
    if "." in name:
        return name
    return f"builtins.{name}" if isinstance(getattr(builtins, name, None), type) else name


def running_result(data: Mapping[str, Any], *, task: Task[..., Any], result_id: str, worker_id: str,
                   started_ms: int, earlier: Sequence[Mapping[str, Any]]) -> TaskResult[..., Any]:
    """The RUNNING result a worker hands to ``task_started`` and the task's context, for
    ``task`` (``payload.task_of(data)``); ``earlier`` are the previous attempts' runs
    (read on a retry only), oldest first."""
    started = payload.from_ms(started_ms)
    return plain_result(
        task=task, id=result_id, status=TaskResultStatus.RUNNING,
        enqueued_at=payload.from_ms(data.get("enqueuedAt")),
        started_at=payload.from_ms(earlier[0].get("startedAt")) if earlier else started,
        finished_at=None, last_attempted_at=started,
        args=list(data.get("args") or []), kwargs=dict(data.get("kwargs") or {}),
        backend=task.backend, errors=task_errors(earlier),
        worker_ids=[*(str(r.get("workerId")) for r in earlier), worker_id],
    )


_RESULT_FIELDS = frozenset({"task", "id", "status", "enqueued_at", "started_at", "finished_at", "last_attempted_at",
                            "args", "kwargs", "backend", "errors", "worker_ids", "_return_value"})
if frozenset(f.name for f in dataclasses.fields(TaskResult)) != _RESULT_FIELDS:  # checked once, at import
    raise ImportError("django.tasks.TaskResult's fields changed: update "
                      "oqronkit.contrib.django.tasks.results.plain_result.")


def plain_result(**values: Any) -> TaskResult[..., Any]:
    """A TaskResult whose args and kwargs are plain JSON already (read from a payload, or
    normalised by ``enqueue``): ``__post_init__``'s normalisation walk, skipped here,
    could change nothing in them."""
    result: TaskResult[..., Any] = object.__new__(TaskResult)
    for name, value in values.items():
        object.__setattr__(result, name, value)
    object.__setattr__(result, "_return_value", None)
    return result
