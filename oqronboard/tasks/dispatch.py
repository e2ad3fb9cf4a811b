"""The handler of every task queue: import the task named in the job, run it, and tell
Django's ``task_started`` / ``task_finished`` receivers.

The worker records the attempt as it does any handler's (a run with the output or the
error and its traceback); this module adds the exception's full class path to the run,
which ``get_result`` turns into ``TaskError.exception_class_path``.
"""

from __future__ import annotations

import traceback
from typing import Any

from django.db import close_old_connections
from django.tasks import TaskContext, TaskResult, TaskResultStatus, task_backends
from django.tasks.base import TaskError
from django.tasks.signals import task_finished, task_started
from django.utils import timezone
from django.utils.json import normalize_json

from oqronboard import engine
from oqronkit.clock import now_ms

from . import results


def dispatch(ctx: Any) -> Any:
    """Run the task of ``ctx.data`` (the payload of :mod:`oqronboard.tasks.payload`)."""
    data = ctx.data
    result = results.running_result(data, result_id=ctx.job_id, worker_id=ctx.worker_id, started_ms=now_ms(),
                                    earlier=_earlier_runs(ctx))
    sender = type(task_backends[result.backend])
    task_started.send(sender=sender, task_result=result)
    try:
        task = result.task
        args, kwargs = result.args, result.kwargs
        value = task.call(TaskContext(task_result=result), *args, **kwargs) if task.takes_context \
            else task.call(*args, **kwargs)
        output = normalize_json(value)
    except BaseException as exc:
        path = f"{type(exc).__module__}.{type(exc).__qualname__}"
        ctx.annotate({results.EXCEPTION_PATH_KEY: path})
        result.errors.append(TaskError(exception_class_path=path, traceback="".join(traceback.format_exception(exc))))
        _finish(result, TaskResultStatus.FAILED)
        task_finished.send(sender=sender, task_result=result)  # inside except: receivers see exc_info
        raise
    finally:
        close_old_connections()  # as a request ends: a broken or expired connection is not kept
    _finish(result, TaskResultStatus.SUCCESSFUL, output)
    task_finished.send(sender=sender, task_result=result)
    return output


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
