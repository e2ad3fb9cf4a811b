"""The handler of every task queue: import the task named in the job, run it, and tell
Django's ``task_started`` / ``task_finished`` receivers.

The worker records the attempt as it does any handler's (a run with the output or the
error and its traceback); this module adds the exception's full class path to the run,
which ``get_result`` turns into ``TaskError.exception_class_path``. The ``TaskResult`` a
signal or the task's context carries is built only when one of them needs it
(:mod:`.listening`): a task nobody listens to is imported, called and normalised.
"""

from __future__ import annotations

import functools
import logging
import traceback
from inspect import iscoroutinefunction
from typing import Any

from django.tasks import Task, TaskContext, TaskResult, TaskResultStatus, task_backends
from django.tasks.base import TaskError
from django.tasks.signals import task_finished, task_started
from django.utils import timezone
from django.utils.json import normalize_json

from oqronkit.clock import now_ms
from oqronkit.contrib.django import engine

from . import hygiene, payload, results
from .listening import would_reach_anyone

logger = logging.getLogger(__name__)


def dispatch(ctx: Any) -> Any:
    """Run the task of ``ctx.data`` (the payload of :mod:`oqronkit.contrib.django.tasks.payload`)."""
    data = ctx.data
    task = payload.task_of(data)
    started_ms = now_ms()
    result: TaskResult[..., Any] | None = None
    if task.takes_context or would_reach_anyone(task_started, logging.INFO):
        result = _running(ctx, task, started_ms)
        task_started.send(sender=_sender(task), task_result=result)
    try:
        value = _call(task, data, result)
        output = None if value is None else normalize_json(value)
    except BaseException as exc:
        path = f"{type(exc).__module__}.{type(exc).__qualname__}"
        ctx.annotate({results.EXCEPTION_PATH_KEY: path})
        if result is not None or would_reach_anyone(task_finished, logging.ERROR):
            result = result or _result_after_failure(ctx, task, started_ms)
        if result is not None:
            result.errors.append(TaskError(exception_class_path=path,
                                           traceback="".join(traceback.format_exception(exc))))
            _finish(result, TaskResultStatus.FAILED)
            task_finished.send(sender=_sender(task), task_result=result)  # inside except: receivers see exc_info
        raise
    finally:
        hygiene.after_task()
    if result is not None or would_reach_anyone(task_finished, logging.INFO):
        if result is None:
            result = _running(ctx, task, started_ms)
        _finish(result, TaskResultStatus.SUCCESSFUL, output)
        task_finished.send(sender=_sender(task), task_result=result)
    return output


def _call(task: Task[..., Any], data: Any, result: TaskResult[..., Any] | None) -> Any:
    """Call the task with the payload's arguments (and its context, if it takes one)."""
    args: tuple[Any, ...] = tuple(data.get("args") or ())
    kwargs = data.get("kwargs") or {}
    if task.takes_context:
        assert result is not None, "dispatch builds the result of a task that takes its context first"
        args = (TaskContext(task_result=result), *args)
    if type(task).call is Task.call and not _is_async(task.func):
        return task.func(*args, **kwargs)  # Task.call's sync branch, without its inspection on every call
    return task.call(*args, **kwargs)


# Task.call asks inspect.iscoroutinefunction on every call (about 1.3 us); a function's answer never changes.
_is_async = functools.lru_cache(maxsize=1024)(iscoroutinefunction)


def _running(ctx: Any, task: Task[..., Any], started_ms: int) -> TaskResult[..., Any]:
    return results.running_result(ctx.data, task=task, result_id=ctx.job_id, worker_id=ctx.worker_id,
                                  started_ms=started_ms, earlier=_earlier_runs(ctx))


def _result_after_failure(ctx: Any, task: Task[..., Any], started_ms: int) -> TaskResult[..., Any] | None:
    """The result for ``task_finished`` after the task raised, or None when building it
    fails (a retry reads its earlier runs): the task's own error is what the run records."""
    try:
        return _running(ctx, task, started_ms)
    except Exception:
        logger.warning("could not build the failed result of task %s; task_finished not sent", task.name,
                       exc_info=True, extra={"action": "tasks.result_failed"})
        return None


def _sender(task: Task[..., Any]) -> type:
    """Django's backends send their task signals with their own class as the sender."""
    return type(task_backends[task.backend])


def _earlier_runs(ctx: Any) -> list[dict[str, Any]]:
    """The previous attempts' runs, read on a retry only (the first attempt has none);
    where no SQL holds them (memory and redis modes), stand-ins that keep the count."""
    if ctx.attempt <= 1:
        return []
    if engine.get_config().mode in engine.NON_SQL_MODES:
        return [{"workerId": ""} for _ in range(ctx.attempt - 1)]
    return [r for r in results.runs_of(ctx.job_id) if r.get("id") != ctx.run_id]


def _finish(result: TaskResult[..., Any], status: TaskResultStatus, output: Any = None) -> None:
    """Settle the started result in place, as Django's ImmediateBackend does."""
    object.__setattr__(result, "status", status)
    object.__setattr__(result, "finished_at", timezone.now())
    object.__setattr__(result, "_return_value", output)
