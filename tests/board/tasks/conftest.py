"""A task backend on a real database and a real (in-process, burst) worker.

``tasks_on`` configures the engine (SQLite file or a private Postgres schema, a fresh
project) and ``TASKS`` for a whole module, so one burst worker run serves many tests.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

from django.db import connections
from django.tasks import task_backends
from django.test import override_settings

from oqronkit.contrib.django import engine
from oqronkit.contrib.django.tasks import declare_configured_queues
from oqronkit.worker.process import WorkerProcess
from tests.services import unique_name

TASK_QUEUES = ["default", "queue_1"]


def tasks_settings(**options: Any) -> dict[str, Any]:
    return {"default": {"BACKEND": "oqronkit.contrib.django.tasks.OqronBackend", "QUEUES": TASK_QUEUES,
                        "OPTIONS": options}}


@contextlib.contextmanager
def tasks_on(alias: str, mode: str, **options: Any) -> Iterator[None]:
    """The engine on ``alias``'s database for a fresh project, ``TASKS`` on our backend;
    everything undone at the end."""
    oqron = {"MODE": mode, "DATABASE_ALIAS": alias, "PROJECT": unique_name("tasks"), "ENVIRONMENT": "test"}
    with override_settings(OQRON=oqron, TASKS=tasks_settings(**options)):
        try:
            engine.get_durable()  # creates the tables
            yield
        finally:
            engine.reset()
            connections["postgres"].close()


def burst(timeout: float = 30.0) -> WorkerProcess:
    """Declare the task queues, as runworker's autodiscovery does, and run a burst worker
    to its end (threads in this process)."""
    queues = declare_configured_queues()
    process = WorkerProcess(engine.get_engine(), queues=queues, burst=True, poll_interval=0.05)
    thread = threading.Thread(target=process.run, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "burst worker did not end"
    return process


def backend() -> Any:
    return task_backends["default"]


def wait_for(predicate: Callable[[], object], timeout: float = 10.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met"
        time.sleep(0.02)


@contextlib.contextmanager
def on_database(kind: str, request: Any, django_db_blocker: Any, **options: Any) -> Iterator[str]:
    """``tasks_on`` the SQLite test database or the private Postgres schema; yields the alias."""
    if kind == "sqlite":
        request.getfixturevalue("django_db_setup")
    if kind == "postgres":
        request.getfixturevalue("board_pg_url")
    with django_db_blocker.unblock():
        alias = "postgres" if kind == "postgres" else "default"
        with tasks_on(alias, kind, **options):
            yield alias


class Records(logging.Handler):
    """Every record a logger emits, kept for the test to read."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def about(self, result_id: str) -> list[tuple[int, str, bool]]:
        return [(r.levelno, r.getMessage().rsplit("state=", 1)[-1], r.exc_info is not None)
                for r in self.records if f"id={result_id} " in r.getMessage()]
