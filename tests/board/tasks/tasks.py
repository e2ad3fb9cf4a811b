"""Task functions of the conformance suite and the backend's tests.

Adapted from Django 6.1's ``tests/tasks/tasks.py`` (BSD licence, the Django Software
Foundation): the same tasks, minus the 5-minute ``hang``, plus ours (a flaky task for
retries, a task that sets job options).
"""

from __future__ import annotations

import time
from typing import Any

from django.tasks import TaskContext, task

from oqronkit.contrib.django.tasks import OqronTask


@task()
def noop_task(*args: Any, **kwargs: Any) -> None:
    return None


@task
def noop_task_from_bare_decorator(*args: Any, **kwargs: Any) -> None:
    return None


@task()
async def noop_task_async(*args: Any, **kwargs: Any) -> None:
    return None


@task()
def calculate_meaning_of_life() -> int:
    return 42


@task()
async def calculate_meaning_of_life_async() -> int:
    return 42


@task()
def failing_task_value_error() -> None:
    raise ValueError("This Task failed due to ValueError")


@task()
def failing_task_system_exit() -> None:
    raise SystemExit("This Task failed due to SystemExit")


@task()
def failing_task_keyboard_interrupt() -> None:
    raise KeyboardInterrupt("This Task failed due to KeyboardInterrupt")


@task()
def complex_exception() -> None:
    raise ValueError(ValueError("This task failed"))


@task()
def complex_return_value() -> Any:
    return lambda: True  # neither JSON nor picklable


@task()
def exit_task() -> None:
    exit(1)


@task()
def sleep_for(seconds: float) -> None:
    time.sleep(seconds)


@task(takes_context=True)
def get_task_id(context: TaskContext) -> str:
    return context.task_result.id


@task(takes_context=True)
def test_context(context: TaskContext, attempt: int) -> None:
    assert isinstance(context, TaskContext)
    assert context.attempt == attempt


@task(takes_context=True, retries=2, backoff=0.01)  # type: ignore[call-overload]
def flaky(context: TaskContext, fail_times: int) -> dict[str, Any]:
    """Fails its first ``fail_times`` attempts, then reports what its context said."""
    if context.attempt <= fail_times:
        raise RuntimeError(f"attempt {context.attempt} fails")
    return {"attempt": context.attempt, "workers": len(context.task_result.worker_ids),
            "errors": len(context.task_result.errors)}


@task()
def echo(value: Any) -> Any:
    return value


#: What ``record`` saw, in order: the worker runs in the test's process.
SEEN: list[Any] = []


@task()
def record(value: Any) -> None:
    SEEN.append(value)


#: The connections the database tasks used, in order (the worker runs in the test's process).
OPENED: list[Any] = []


@task()
def touch_database(alias: str) -> int:
    """One query on this thread's connection of ``alias``; the connection is kept in OPENED."""
    from django.db import connections

    connection = connections[alias]
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        (one,) = cursor.fetchone()
    OPENED.append(connection)
    return int(one)


@task()
def backend_pid(alias: str, terminate: bool = False) -> int:
    """The Postgres backend of this thread's connection of ``alias``; with ``terminate``,
    that backend is then ended by the server (as an idle timeout or a restart would),
    which the connection object does not notice."""
    from django.db import connections

    connection = connections[alias]
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    OPENED.append(connection)
    if terminate:
        other = connection.get_new_connection(connection.get_connection_params())
        try:
            other.autocommit = True
            other.execute("SELECT pg_terminate_backend(%s)", (pid,))
            deadline = time.monotonic() + 5
            while other.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone():
                assert time.monotonic() < deadline, "the backend outlived pg_terminate_backend"
                time.sleep(0.01)
        finally:
            other.close()
    return int(pid)


class LoggedCallTask(OqronTask):
    """A task class whose ``call`` does more than Task's: the worker must go through it."""

    def call(self, *args: Any, **kwargs: Any) -> Any:
        SEEN.append(("call", self.func.__name__))
        return super().call(*args, **kwargs)


def through_its_call(value: Any) -> Any:
    return value


# As @task does, under the function's own name (a task is imported by its function's path).
through_its_call = LoggedCallTask(priority=0, func=through_its_call, queue_name="default",  # type: ignore[assignment]
                                  backend="default", run_after=None, takes_context=False)
