"""The worker's path for tasks builds a ``TaskResult`` only for whoever needs it and
checks a thread's connections only once it opened one (oqronboard/tasks/dispatch.py,
listening.py, hygiene.py): what is skipped otherwise must still happen then. Every case
with a real burst worker, on SQLite and on Postgres."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connections
from django.tasks import TaskResultStatus
from django.tasks.signals import task_enqueued, task_finished, task_started

from oqronkit.contrib.django.tasks import OqronBackend, dispatch
from oqronkit.contrib.django.tasks.listening import would_reach_anyone
from oqronkit.worker import process as worker_process

from . import tasks as t
from .conftest import Records, backend, burst, on_database


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, django_db_blocker: Any) -> Iterator[str]:
    with on_database(request.param, request, django_db_blocker, CONCURRENCY=1, PREFETCH=0) as alias:
        yield alias


@pytest.fixture
def tasks_log() -> Iterator[tuple[logging.Logger, Records]]:
    """The ``django.tasks`` logger at WARNING (the board's default without DEBUG), recorded."""
    logger, records = logging.getLogger("django.tasks"), Records()
    level = logger.level
    logger.setLevel(logging.WARNING)
    logger.addHandler(records)
    try:
        yield logger, records
    finally:
        logger.removeHandler(records)
        logger.setLevel(level)


def snapshot(signal: Any, sender: Any, task_result: Any) -> dict[str, Any]:
    """What a receiver sees at the moment of the signal (the result is settled in place later)."""
    return {"signal": "started" if signal is task_started else "finished", "sender": sender,
            "id": task_result.id, "status": task_result.status, "args": list(task_result.args),
            "kwargs": dict(task_result.kwargs), "workers": list(task_result.worker_ids),
            "started": task_result.started_at, "finished": task_result.finished_at,
            "output": task_result._return_value, "errors": [e.exception_class_path for e in task_result.errors],
            "handling": sys.exc_info()[0]}


@pytest.mark.parametrize("signals", [(task_started, task_finished), (task_finished,)],
                         ids=["started-and-finished", "finished-only"])
def test_a_receiver_gets_the_result_with_every_field(db: str, tasks_log: Any, signals: tuple[Any, ...]) -> None:
    seen: list[dict[str, Any]] = []

    def receive(signal: Any, sender: Any, task_result: Any, **kwargs: Any) -> None:
        seen.append(snapshot(signal, sender, task_result))

    for signal in signals:
        signal.connect(receive)  # a plain weak receiver, no dispatch_uid
    try:
        ok = t.echo.enqueue({"x": 1})
        failed = t.failing_task_value_error.enqueue()
        burst()
    finally:
        for signal in signals:
            signal.disconnect(receive)
    of_ok = [s for s in seen if s["id"] == ok.id]
    of_failed = [s for s in seen if s["id"] == failed.id]
    assert [s["signal"] for s in of_ok] == (["started"] if task_started in signals else []) + ["finished"]
    if task_started in signals:
        started = of_ok[0]
        assert started["status"] == TaskResultStatus.RUNNING and started["finished"] is None
        assert started["output"] is None and started["started"] is not None
    finished = of_ok[-1]
    assert finished["sender"] is OqronBackend and finished["status"] == TaskResultStatus.SUCCESSFUL
    assert finished["args"] == [{"x": 1}] and finished["kwargs"] == {} and finished["output"] == {"x": 1}
    assert len(finished["workers"]) == 1 and finished["errors"] == [] and finished["handling"] is None
    assert finished["started"] is not None and finished["finished"] >= finished["started"]
    stored = backend().get_result(ok.id)
    assert stored.worker_ids == finished["workers"] and stored.return_value == {"x": 1}
    last = of_failed[-1]
    assert last["signal"] == "finished" and last["status"] == TaskResultStatus.FAILED
    assert last["errors"] == ["builtins.ValueError"] and last["handling"] is ValueError  # sent inside except
    assert tasks_log[1].about(ok.id) == []  # Django's own receivers stay quiet at WARNING


def test_djangos_logging_receivers_log_at_their_levels(db: str, tasks_log: Any) -> None:
    logger, records = tasks_log
    logger.setLevel(logging.INFO)
    loud = t.echo.enqueue("loud")
    burst()
    logger.setLevel(logging.WARNING)
    quiet, failed = t.echo.enqueue("quiet"), t.failing_task_value_error.enqueue()
    burst()
    assert records.about(loud.id) == [(logging.INFO, "RUNNING", False), (logging.INFO, "SUCCESSFUL", False)]
    assert records.about(quiet.id) == []
    assert records.about(failed.id) == [(logging.ERROR, "FAILED", True)]  # with the exception's traceback


def test_would_reach_anyone_skips_only_djangos_logging_receivers_below_their_level(tasks_log: Any) -> None:
    def receive(**kwargs: Any) -> None: ...

    assert not would_reach_anyone(task_started, logging.INFO)
    assert not would_reach_anyone(task_enqueued, logging.DEBUG)
    assert would_reach_anyone(task_finished, logging.ERROR)  # a failure is logged at WARNING too
    task_started.connect(receive)
    assert would_reach_anyone(task_started, logging.INFO)
    task_started.disconnect(receive)
    task_started.connect(receive, dispatch_uid="test-uid")
    assert would_reach_anyone(task_started, logging.INFO)
    task_started.disconnect(dispatch_uid="test-uid")
    assert not would_reach_anyone(task_started, logging.INFO)


def test_a_connection_a_task_opened_is_closed_after_it(db: str) -> None:
    t.OPENED.clear()
    result = t.touch_database.enqueue(db)
    burst()
    assert backend().get_result(result.id).return_value == 1
    (connection,) = t.OPENED
    assert connection.connection is None  # CONN_MAX_AGE 0: closed as a request's end closes it


@pytest.fixture
def persistent_checked_connections(request: pytest.FixtureRequest, django_db_blocker: Any,
                                   monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Postgres with persistent connections (CONN_MAX_AGE None) and CONN_HEALTH_CHECKS on,
    and a worker with one slot thread (no spare), which runs every task."""
    monkeypatch.setattr(worker_process, "SPARE_SLOTS", 0)
    with on_database("postgres", request, django_db_blocker, CONCURRENCY=1, PREFETCH=0) as alias:
        settings_dict = connections.settings[alias]
        saved = settings_dict["CONN_MAX_AGE"], settings_dict["CONN_HEALTH_CHECKS"]
        settings_dict["CONN_MAX_AGE"], settings_dict["CONN_HEALTH_CHECKS"] = None, True
        try:
            yield alias
        finally:
            settings_dict["CONN_MAX_AGE"], settings_dict["CONN_HEALTH_CHECKS"] = saved


def test_a_task_uses_the_database_after_the_server_closed_the_threads_connection(
        persistent_checked_connections: str) -> None:
    alias = persistent_checked_connections
    t.OPENED.clear()
    first = t.backend_pid.using(priority=10).enqueue(alias, terminate=True)
    second = t.backend_pid.using(priority=0).enqueue(alias)
    burst()
    first_pid, second_pid = (backend().get_result(r.id) for r in (first, second))
    assert first_pid.status == second_pid.status == TaskResultStatus.SUCCESSFUL, second_pid.errors
    assert first_pid.return_value != second_pid.return_value  # a new backend: the dead one was not used
    assert t.OPENED[0] is t.OPENED[1]  # the same thread's connection, kept between the tasks
    kept = t.OPENED[1]
    assert kept.connection is not None  # persistent: still open after the task
    kept.inc_thread_sharing()  # the worker's thread has ended: close it from here
    kept.close()


def test_sync_async_and_own_call_tasks_each_run_once_with_their_value(db: str) -> None:
    t.SEEN.clear()
    sync, asynchronous, own = (t.echo.enqueue("sync"), t.calculate_meaning_of_life_async.enqueue(),
                               t.through_its_call.enqueue("own"))
    burst()
    assert [backend().get_result(r.id).return_value for r in (sync, asynchronous, own)] == ["sync", 42, "own"]
    assert t.SEEN == [("call", "through_its_call")]  # a task class's own call() is what runs the task


def test_a_failed_result_that_cannot_be_built_leaves_the_tasks_own_error(
        db: str, tasks_log: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Building the result after a failure reads the earlier runs on a retry; when that
    fails, the run still records the task's ValueError, and task_finished is not sent."""
    seen: list[Any] = []

    def receive(**kwargs: Any) -> None:
        seen.append(kwargs["task_result"])

    def unreadable(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the earlier runs could not be read (test)")

    monkeypatch.setattr(dispatch, "_running", unreadable)
    task_finished.connect(receive)
    try:
        failed = t.failing_task_value_error.enqueue()
        burst()
    finally:
        task_finished.disconnect(receive)
    monkeypatch.undo()
    assert seen == []
    assert [e.exception_class_path for e in backend().get_result(failed.id).errors] == ["builtins.ValueError"]
    assert any(r.getMessage().startswith("could not build the failed result") for r in caplog.records)
