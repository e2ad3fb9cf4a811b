"""``OqronBackend`` beyond Django's contract: how a task becomes a job (priority,
run_after, job options), retries and dead letters, transactions, checks, the board,
and ``runworker`` running tasks in a real process."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connections, transaction
from django.tasks import TaskResultStatus, task_backends
from django.tasks.exceptions import TaskResultDoesNotExist
from django.tasks.signals import task_enqueued
from django.test import override_settings
from django.urls import reverse
from django.utils import timezone

from oqronkit.contrib.django import engine
from oqronkit.contrib.django.tasks import OqronBackend, enqueue_on_commit
from oqronkit.contrib.django.tasks.options import oqron_priority
from oqronkit.namespaces import dlq_namespace, job_namespace
from tests.board.seed import Board

from . import tasks as t
from .conftest import burst, on_database, tasks_settings

ROOT = Path(__file__).resolve().parents[3]
QUEUE = "tasks.default"


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, django_db_blocker: Any) -> Any:
    with on_database(request.param, request, django_db_blocker) as alias:
        yield alias


def stored_job(result_id: str, queue: str = QUEUE) -> dict[str, Any] | None:
    durable = engine.get_durable()
    record = durable.get(job_namespace(queue), result_id) or durable.get(dlq_namespace(queue), result_id)
    return record.value if record else None


def test_a_task_is_a_job_of_its_queue_with_our_priority_and_run_at(db: str) -> None:
    assert task_backends["default"].supports_get_result is True
    run_after = timezone.now() + timedelta(hours=1)
    result = t.echo.using(priority=7, run_after=run_after).enqueue({"x": 1})
    job = stored_job(result.id)
    assert job is not None and job["queue"] == QUEUE and job["priority"] == oqron_priority(7) == 70
    assert job["status"] == "delayed" and job["runAt"] == int(run_after.timestamp() * 1000)
    assert job["maxAttempts"] == 1  # Django's default: run once, no retries
    assert job["data"]["task"] == "tests.board.tasks.tasks.echo" and job["data"]["args"] == [{"x": 1}]
    other = t.echo.using(queue_name="queue_1").enqueue(2)
    assert stored_job(other.id, "tasks.queue_1") is not None
    assert task_backends["default"].get_result(result.id).status == TaskResultStatus.READY


def test_job_options_per_task_and_per_enqueue(db: str) -> None:
    flaky = t.flaky.enqueue(0)
    assert stored_job(flaky.id)["maxAttempts"] == 3  # @task(retries=2)
    timed = t.echo.using(timeout=2.5, retries=4).enqueue(1)
    job = stored_job(timed.id)
    assert job["timeoutMs"] == 2500 and job["maxAttempts"] == 5
    with pytest.raises(TypeError, match="unexpected option"):
        t.echo.using(attempts=3)


def test_a_job_id_is_an_idempotency_key(db: str) -> None:
    seen: list[str] = []

    def on_enqueued(sender: Any, task_result: Any, **kwargs: Any) -> None:
        seen.append(task_result.id)

    task_enqueued.connect(on_enqueued, dispatch_uid="idempotency")
    try:
        first = t.echo.using(job_id="welcome-42").enqueue("a")
        again = t.echo.using(job_id="welcome-42").enqueue("b")
    finally:
        task_enqueued.disconnect(dispatch_uid="idempotency")
    assert first.id == again.id == "welcome-42" and seen == ["welcome-42"]
    assert again.args == ["a"]  # the job that waits, not a second one


def test_backend_wide_options_and_a_failure_dead_letters(db: str) -> None:
    with override_settings(TASKS=tasks_settings(RETRIES=1, BACKOFF=0.01, CONCURRENCY=2)):
        result = t.failing_task_value_error.enqueue()
        assert stored_job(result.id)["maxAttempts"] == 2
        burst()
        burst()  # the retry waited out its 10 ms backoff
        result.refresh()
    assert result.status == TaskResultStatus.FAILED and result.attempts == 2
    assert [e.exception_class for e in result.errors] == [ValueError, ValueError]
    assert stored_job(result.id)["status"] == "dead"  # retry it from the board's dead letters


def test_enqueue_in_a_transaction_and_on_commit(db: str) -> None:
    backend = task_backends["default"]
    with transaction.atomic(using=db):
        enqueue_on_commit(t.echo, "later", using=db)
        assert engine.get_durable().count(job_namespace(QUEUE)) == 0
    assert engine.get_durable().count(job_namespace(QUEUE)) == 1
    with transaction.atomic(using=db):
        enqueue_on_commit(t.echo, "never", using=db)
        transaction.set_rollback(True, using=db)
    assert engine.get_durable().count(job_namespace(QUEUE)) == 1
    # enqueue itself joins the transaction: the job exists once it commits, never if it rolls back.
    with transaction.atomic(using=db):
        dropped = t.echo.enqueue("inside")
        assert backend.get_result(dropped.id).status == TaskResultStatus.READY  # seen inside the transaction
        transaction.set_rollback(True, using=db)
    with pytest.raises(TaskResultDoesNotExist):
        backend.get_result(dropped.id)
    with transaction.atomic(using=db):
        kept = t.echo.enqueue("inside")
    assert backend.get_result(kept.id).status == TaskResultStatus.READY
    assert engine.get_durable().count(job_namespace(QUEUE)) == 2


def test_memory_mode_enqueues_but_cannot_read_results(settings: Any) -> None:
    settings.OQRON = {"MODE": "memory"}
    settings.TASKS = tasks_settings()
    try:
        result = t.echo.enqueue(1)
        assert stored_job(result.id) is not None
        assert task_backends["default"].supports_get_result is False
        with pytest.raises(NotImplementedError, match="memory"):
            task_backends["default"].get_result(result.id)
    finally:
        engine.reset()


def test_checks_report_bad_options(settings: Any) -> None:
    settings.TASKS = {
        "default": {"BACKEND": "oqronkit.contrib.django.tasks.OqronBackend", "QUEUES": [], "OPTIONS": {"RETRIS": 3}},
        "bad": {"BACKEND": "oqronkit.contrib.django.tasks.OqronBackend", "OPTIONS": {"CONCURRENCY": 0,
                                                                                     "QUEUE_PREFIX": "b."}},
        "one": {"BACKEND": "oqronkit.contrib.django.tasks.OqronBackend", "OPTIONS": {"QUEUE_PREFIX": "same."}},
        "two": {"BACKEND": "oqronkit.contrib.django.tasks.OqronBackend", "OPTIONS": {"QUEUE_PREFIX": "same."}},
        "fine": {"BACKEND": "oqronkit.contrib.django.tasks.OqronBackend", "OPTIONS": {"QUEUE_PREFIX": "fine.",
                                                                                      "RETRIES": 2}},
    }
    found = {alias: [(m.id, m.msg) for m in task_backends[alias].check()] for alias in settings.TASKS}
    assert [i for i, _ in found["default"]] == ["oqron.E101", "oqron.E101"]
    assert "RETRIS" in found["default"][0][1] and "QUEUES is empty" in found["default"][1][1]
    assert found["bad"][0][0] == "oqron.E101" and "concurrency" in found["bad"][0][1]
    assert found["one"][0][0] == "oqron.E102" and "same.default" in found["one"][0][1]
    assert found["fine"] == []
    with pytest.raises(ImproperlyConfigured, match="RETRIS"):
        t.echo.using(backend="default", queue_name="default").enqueue(1)
    assert OqronBackend.supports_defer and OqronBackend.supports_priority and OqronBackend.supports_async_task
    assert task_backends["fine"].supports_get_result is False  # the test settings' memory mode


def test_tasks_show_on_the_board_like_any_queue(board: Board) -> None:
    waiting = t.echo.enqueue("waiting")
    page = board.viewer.get(reverse("oqronboard:queue-jobs", args=[QUEUE])).content.decode()
    assert waiting.id in page
    burst()
    assert task_backends["default"].get_result(waiting.id).return_value == "waiting"
    assert board.viewer.get(reverse("oqronboard:home")).content.decode().count(QUEUE) >= 1


@pytest.mark.slow
def test_runworker_runs_tasks(tmp_path: Path) -> None:
    env = {**os.environ, "OQRON_MODE": "sqlite", "OQRON_DATABASE_URL": f"sqlite:///{tmp_path / 'o.sqlite3'}",
           "OQRON_PROJECT": "tasks-runworker", "DJANGO_SETTINGS_MODULE": "oqronboard.settings"}
    script = ("import django; django.setup(); from tests.board.tasks import tasks as t; "
              "print(t.calculate_meaning_of_life.enqueue().id)")
    result_id = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                               timeout=60, check=True).stdout.split()[-1]
    worker = subprocess.run([sys.executable, "manage.py", "runworker", "--burst", "--log-level", "warning"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert worker.returncode == 0 and QUEUE in worker.stdout, worker.stdout + worker.stderr
    script = ("import django; django.setup(); from tests.board.tasks import tasks as t; "
              f"r = t.calculate_meaning_of_life.get_result({result_id!r}); print(r.status, r.return_value)")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.split()[-2:] == ["SUCCESSFUL", "42"]
    connections.close_all()
