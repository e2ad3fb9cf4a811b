"""Conformance of ``OqronBackend`` with Django's tasks framework, on SQLite and Postgres
with a real (in-process, burst) worker.

Derived from Django 6.1's ``tests/tasks/`` (``test_tasks.py``: the Task API against a
backend; ``test_immediate_backend.py``: running tasks) and from django-tasks-db 0.13's
``tests/tests.py`` (``DatabaseBackendTestCase``, ``DatabaseBackendWorkerTestCase``),
both BSD-licensed. Adapted, not vendored: the cases that hold for any backend that
stores results and runs them in a worker, rewritten for pytest and our fixtures. Where
a case is left out or changed, the comment beside it says why.
"""

from __future__ import annotations

import dataclasses
import logging
import pickle
import re
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.tasks import TaskResultStatus, default_task_backend, task
from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist, TaskResultMismatch
from django.tasks.signals import task_enqueued, task_finished, task_started
from django.utils import timezone
from django.utils.module_loading import import_string

from oqronkit.contrib.django.tasks import OqronBackend

from . import tasks as t
from .conftest import Records, backend, burst, on_database

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
FAILURES = [
    (t.failing_task_value_error, ValueError, "This Task failed due to ValueError"),
    (t.failing_task_system_exit, SystemExit, "This Task failed due to SystemExit"),
    # ImmediateBackend lets KeyboardInterrupt through to the caller; a worker thread has
    # no caller to stop, so the attempt fails like any other exception.
    (t.failing_task_keyboard_interrupt, KeyboardInterrupt, "This Task failed due to KeyboardInterrupt"),
]


class Signals:
    def __init__(self) -> None:
        self.seen: list[tuple[str, Any, str, str]] = []

    def receiver(self, name: str) -> Any:
        def receive(sender: Any, task_result: Any, **kwargs: Any) -> None:
            self.seen.append((name, sender, task_result.id, task_result.status))
        return receive

    def of(self, result_id: str) -> list[tuple[str, str]]:
        return [(name, status) for name, _, rid, status in self.seen if rid == result_id]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def world(request: pytest.FixtureRequest, django_db_blocker: Any) -> Any:
    """Every worker case enqueued, one worker run (plus one for the deferred and retried
    ones), every result refreshed."""
    with on_database(request.param, request, django_db_blocker, CONCURRENCY=1, PREFETCH=0):
        yield _run_world()


def _run_world() -> SimpleNamespace:
    signals = Signals()
    receivers = {name: signals.receiver(name) for name in ("enqueued", "started", "finished")}
    for name, signal in (("enqueued", task_enqueued), ("started", task_started), ("finished", task_finished)):
        signal.connect(receivers[name], weak=False, dispatch_uid=f"conformance-{name}")
    logs = Records()
    tasks_logger = logging.getLogger("django.tasks")
    level = tasks_logger.level
    tasks_logger.addHandler(logs)
    tasks_logger.setLevel(logging.DEBUG)
    try:
        w = SimpleNamespace(signals=signals, logs=logs)
        w.noop = t.noop_task.enqueue(1, two=3)
        w.noop_async = t.noop_task_async.enqueue(1, two=3)
        w.meaning = default_task_backend.enqueue(t.calculate_meaning_of_life, [], {})
        w.failures = [(task_.enqueue(), exc, msg) for task_, exc, msg in FAILURES]
        w.complex_exception = t.complex_exception.enqueue()
        w.complex_return = t.complex_return_value.enqueue()
        w.exit = t.exit_task.enqueue()
        w.task_id = t.get_task_id.enqueue()
        w.context = t.test_context.enqueue(1)
        w.other_queue = t.echo.using(queue_name="queue_1").enqueue("q1")
        t.SEEN.clear()
        w.by_priority = [t.record.using(priority=p).enqueue(p) for p in (-100, 0, 100, 50)]
        w.deferred = t.calculate_meaning_of_life.using(run_after=timezone.now() + timedelta(seconds=1.5)).enqueue()
        w.flaky = t.flaky.enqueue(1)
        w.first_pass_deferred = default_task_backend.get_result(w.deferred.id).status
        burst()
        w.order = list(t.SEEN)
        w.deferred_after_first_burst = default_task_backend.get_result(w.deferred.id).status
        _wait_past(w.deferred.task.run_after)
        burst()
        for result in _results(w):
            result.refresh()
        return w
    finally:
        tasks_logger.removeHandler(logs)
        tasks_logger.setLevel(level)
        for name, signal in (("enqueued", task_enqueued), ("started", task_started), ("finished", task_finished)):
            signal.disconnect(dispatch_uid=f"conformance-{name}")


def _wait_past(moment: datetime | None) -> None:
    import time

    assert moment is not None
    time.sleep(max(0.0, (moment - timezone.now()).total_seconds()) + 0.1)


def _results(w: SimpleNamespace) -> list[Any]:
    return [w.noop, w.noop_async, w.meaning, *(r for r, _, _ in w.failures), w.complex_exception, w.complex_return,
            w.exit, w.task_id, w.context, w.other_queue, *w.by_priority, w.deferred, w.flaky]


def _finished_in_order(result: Any) -> None:
    assert result.started_at is not None and result.last_attempted_at is not None
    assert result.finished_at is not None
    assert result.started_at >= result.enqueued_at
    assert result.finished_at >= result.started_at


# -- the Task API against this backend (Django: test_tasks.py) ---------------------------


def test_using_correct_backend(world: Any) -> None:
    assert isinstance(backend(), OqronBackend)
    assert default_task_backend.alias == "default"


def test_enqueue_task(world: Any) -> None:
    for task_ in (t.noop_task, t.noop_task_async):
        result = task_.enqueue(1, two=3)
        assert result.status == TaskResultStatus.READY and not result.is_finished
        assert result.started_at is None and result.last_attempted_at is None and result.finished_at is None
        with pytest.raises(ValueError, match="Task has not finished yet"):
            result.return_value  # noqa: B018
        assert result.task == task_ and result.args == [1] and result.kwargs == {"two": 3}
        assert result.attempts == 0


def test_enqueue_task_async(world: Any) -> None:
    async_to_sync(_test_enqueue_task_async)()


async def _test_enqueue_task_async() -> None:
    for task_ in (t.noop_task, t.noop_task_async):
        result = await task_.aenqueue()
        assert result.status == TaskResultStatus.READY and result.task == task_
        assert result.args == [] and result.kwargs == {}


def test_enqueue_sends_task_enqueued(world: Any) -> None:
    assert world.signals.of(world.noop.id)[0] == ("enqueued", TaskResultStatus.READY)
    assert all(sender is OqronBackend for _, sender, _, _ in world.signals.seen)


def test_enqueue_with_invalid_argument(world: Any) -> None:
    with pytest.raises(TypeError, match="Unsupported type"):
        t.noop_task.enqueue(datetime.now())


def test_aenqueue_with_invalid_argument(world: Any) -> None:
    async_to_sync(_test_aenqueue_with_invalid_argument)()


async def _test_aenqueue_with_invalid_argument() -> None:
    with pytest.raises(TypeError, match="Unsupported type"):
        await t.noop_task.aenqueue(datetime.now())


def test_get_result(world: Any) -> None:
    result = default_task_backend.enqueue(t.noop_task, [], {})
    assert t.noop_task.get_result(result.id) == result


def test_get_result_async(world: Any) -> None:
    async_to_sync(_test_get_result_async)()


async def _test_get_result_async() -> None:
    result = await default_task_backend.aenqueue(t.noop_task, [], {})
    assert await t.noop_task.aget_result(result.id) == result


def test_refresh_result(world: Any) -> None:
    async_to_sync(_test_refresh_result)()


async def _test_refresh_result() -> None:
    result = await t.noop_task.aenqueue()
    original = dataclasses.asdict(result)
    await result.arefresh()
    assert dataclasses.asdict(result) == original


def test_refresh_result_sync(world: Any) -> None:
    result = t.noop_task.enqueue()
    original = dataclasses.asdict(result)
    result.refresh()
    assert dataclasses.asdict(result) == original


def test_get_missing_result(world: Any) -> None:
    async_to_sync(_test_get_missing_result)()


async def _test_get_missing_result() -> None:
    for missing in ("123", "0" * 26, "x" * 300):
        with pytest.raises(TaskResultDoesNotExist):
            await t.noop_task.aget_result(missing)


def test_get_missing_result_sync(world: Any) -> None:
    with pytest.raises(TaskResultDoesNotExist):
        t.noop_task.get_result("123")


def test_get_incorrect_result(world: Any) -> None:
    result = default_task_backend.enqueue(t.noop_task_async, [], {})
    with pytest.raises(TaskResultMismatch, match="Task does not match"):
        t.noop_task.get_result(result.id)


def test_using_queue_name_and_unknown_queue(world: Any) -> None:
    assert t.noop_task.using(queue_name="queue_1").queue_name == "queue_1"
    with pytest.raises(InvalidTask, match=re.escape("Queue 'queue-2' is not valid for backend.")):
        t.noop_task.using(queue_name="queue-2")


def test_validate_on_enqueue(world: Any) -> None:
    # django-tasks-db: a task made valid under other settings is checked again on enqueue.
    from django.test import override_settings

    only_unknown = {"default": {"BACKEND": "oqronkit.contrib.django.tasks.OqronBackend", "QUEUES": ["unknown_queue"]}}
    with override_settings(TASKS=only_unknown):
        odd = t.noop_task.using(queue_name="unknown_queue")
    with pytest.raises(InvalidTask, match="Queue 'unknown_queue' is not valid for backend"):
        odd.enqueue()


def test_priority_and_run_after_validation(world: Any) -> None:
    for bad in (-101, 101, 3.1):
        with pytest.raises(InvalidTask, match=re.escape("priority must be a whole number between -100 and 100.")):
            t.noop_task.using(priority=bad)
    for good in (100, -100, 0):
        t.noop_task.using(priority=good)
    with pytest.raises(InvalidTask, match=re.escape("run_after must be an aware datetime.")):
        t.noop_task.using(run_after=datetime.now())
    with pytest.raises(TypeError, match="run_after cannot be defined statically"):
        task(run_after=timezone.now())(t.calculate_meaning_of_life.func)


def test_takes_context_without_taking_context(world: Any) -> None:
    message = "Task takes context but does not have a first argument of 'context'."
    with pytest.raises(InvalidTask, match=re.escape(message)):
        task(takes_context=True)(t.calculate_meaning_of_life.func)


def test_invalid_function(world: Any) -> None:
    with pytest.raises(InvalidTask, match=re.escape("Task function must be defined at a module level.")):
        task()(any)


def test_module_path_and_pickle(world: Any) -> None:
    assert import_string(t.noop_task.module_path) is t.noop_task
    assert pickle.loads(pickle.dumps(t.noop_task)) == t.noop_task
    result = t.noop_task.enqueue()
    assert pickle.loads(pickle.dumps(result)) == result


def test_enqueue_logs(world: Any) -> None:
    messages = [r.getMessage() for r in world.logs.records if world.noop.id in r.getMessage()]
    assert "enqueued" in messages[0]
    assert any("state=RUNNING" in m for m in messages) and any("state=SUCCESSFUL" in m for m in messages)
    assert not any("None" in m for m in messages)


# -- running tasks (Django: test_immediate_backend.py; django-tasks-db: the worker cases) --


def test_run_enqueued_task(world: Any) -> None:
    for result in (world.noop, world.noop_async):
        assert result.status == TaskResultStatus.SUCCESSFUL and result.is_finished
        _finished_in_order(result)
        assert result.return_value is None and result.args == [1] and result.kwargs == {"two": 3}
        assert result.attempts == 1 and len(result.worker_ids) == 1


def test_result(world: Any) -> None:
    assert world.meaning.status == TaskResultStatus.SUCCESSFUL
    assert world.meaning.return_value == 42


def test_catches_exception(world: Any) -> None:
    for result, exception, message in world.failures:
        assert result.status == TaskResultStatus.FAILED and result.is_finished
        with pytest.raises(ValueError, match="Task failed"):
            result.return_value  # noqa: B018
        _finished_in_order(result)
        assert result.errors[0].exception_class is exception
        assert result.errors[0].traceback.endswith(f"{exception.__name__}: {message}\n")


def test_exit_task_fails(world: Any) -> None:
    assert world.exit.status == TaskResultStatus.FAILED
    assert world.exit.errors[0].exception_class is SystemExit


def test_complex_exception(world: Any) -> None:
    result = world.complex_exception
    assert result.status == TaskResultStatus.FAILED and result._return_value is None
    assert result.errors[0].exception_class is ValueError
    assert 'ValueError(ValueError("This task failed"))' in result.errors[0].traceback


def test_complex_return_value(world: Any) -> None:
    result = world.complex_return
    assert result.status == TaskResultStatus.FAILED and result._return_value is None
    _finished_in_order(result)
    assert result.errors[0].exception_class is TypeError
    assert "Unsupported type" in result.errors[0].traceback


def test_failed_logs(world: Any) -> None:
    failed = world.failures[0][0]
    records = [r for r in world.logs.records if failed.id in r.getMessage()]
    assert any("state=FAILED" in r.getMessage() and r.levelno == logging.ERROR and r.exc_info for r in records)


def test_started_and_finished_signals(world: Any) -> None:
    assert world.signals.of(world.meaning.id) == [
        ("enqueued", TaskResultStatus.READY), ("started", TaskResultStatus.RUNNING),
        ("finished", TaskResultStatus.SUCCESSFUL)]
    assert world.signals.of(world.failures[0][0].id)[-1] == ("finished", TaskResultStatus.FAILED)


def test_takes_context(world: Any) -> None:
    assert world.task_id.return_value == world.task_id.id


def test_context(world: Any) -> None:
    assert world.context.status == TaskResultStatus.SUCCESSFUL


def test_other_queue(world: Any) -> None:
    assert world.other_queue.status == TaskResultStatus.SUCCESSFUL and world.other_queue.return_value == "q1"
    assert world.other_queue.task.queue_name == "queue_1"


def test_priority_order(world: Any) -> None:
    # django-tasks-db: higher priority first (one worker slot, nothing prefetched).
    assert world.order == [100, 50, 0, -100]
    assert [r.task.priority for r in world.by_priority] == [-100, 0, 100, 50]


def test_run_after(world: Any) -> None:
    assert world.first_pass_deferred == TaskResultStatus.READY
    assert world.deferred_after_first_burst == TaskResultStatus.READY
    result = world.deferred
    assert result.status == TaskResultStatus.SUCCESSFUL and result.return_value == 42
    assert result.started_at >= result.task.run_after - timedelta(milliseconds=1)


def test_retried_task_keeps_every_attempt(world: Any) -> None:
    # Ours: Django's backends never retry; here a failed attempt is one TaskError.
    result = world.flaky
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == {"attempt": 2, "workers": 2, "errors": 1}
    assert result.attempts == 2 and len(result.errors) == 1
    assert result.errors[0].exception_class is RuntimeError
    assert "attempt 1 fails" in result.errors[0].traceback
