"""Rows for the board's view tests, in the exact shapes the engine writes them.

Jobs are :class:`oqronkit.Job` values, runs come from ``oqronkit.queues.runs.new_run`` and
``finish_run``: the pages are tested against what a worker really stores.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client

from oqronboard.base.roles import OPERATORS_GROUP, PRODUCTION_OPERATORS_GROUP, VIEWERS_GROUP
from oqronboard.base.scope import BoardScope
from oqronboard.models import ScopeGrant, ensure_board_groups
from oqronkit import DurablePlane, Job, RecordWrite
from oqronkit.clock import now_ms
from oqronkit.queues.runs import add_log, finish_run, new_run
from tests.board.conftest import SharedDatabase

MINUTE = 60_000


def run_value(
    run_id: str, *, name: str = "emails", status: str = "completed", started: int | None = None,
    job_id: str | None = None, attempts: int = 1, worker: str = "worker-1", module: str = "queue",
    input: Any = None, output: Any = None, error: dict | None = None, logs: list[tuple[str, str]] = (),
    progress: float | None = None,
) -> dict[str, Any]:
    at = now_ms() - MINUTE if started is None else started
    run = new_run(name=name, module=module, trigger="queue", input=input if input is not None else {"n": 1},
                  attempts=attempts, app="test", environment="test", worker_id=worker, job_id=job_id, started_at=at)
    run["id"] = run_id
    for level, msg in logs:
        add_log(run, level, msg, limit=200)
    if progress is not None:
        run["progressPercent"] = progress
    if status != "running":
        finish_run(run, status, output=output, error=error, at=at + 1500)
    return run


def error(message: str = "boom", kind: str = "ValueError") -> dict[str, Any]:
    return {"type": kind, "message": message, "traceback": f"Traceback (most recent call last):\n{kind}: {message}\n",
            "ts": now_ms()}


def put_runs(plane: DurablePlane, runs: list[dict[str, Any]]) -> None:
    plane.put_many(RecordWrite("runs", r["id"], r) for r in runs)


def job_value(queue: str, job_id: str, *, status: str = "waiting", created: int | None = None,
              data: Any = None, run_at: int | None = None, attempts: int = 0) -> Job:
    at = now_ms() if created is None else created
    return Job(id=job_id, queue=queue, data=data if data is not None else {"n": 1}, status=status,  # type: ignore[arg-type]
               created_at=at, updated_at=at, run_at=run_at, attempts=attempts, max_attempts=3)


def put_jobs(plane: DurablePlane, jobs: list[Job]) -> None:
    plane.put_many(RecordWrite(j.namespace, j.id, j.to_value()) for j in jobs)


def dead_job(queue: str, job_id: str, *, message: str = "boom", kind: str = "ValueError",
             died: int | None = None, data: Any = None) -> Job:
    job = job_value(queue, job_id, status="active", data=data, attempts=3)
    job.record_error({**error(message, kind), "attempt": 3})
    job.die("failed on attempt 3 of 3", died if died is not None else now_ms())
    return job


def queue_control(plane: DurablePlane, queue: str, *, paused: bool = False, concurrency: int = 5) -> None:
    plane.put("queue", queue, {"name": queue, "paused": paused, "concurrency": concurrency, "strategy": "fifo",
                               "handler": f"app.handlers.{queue}", "updatedAt": now_ms()})


@dataclass
class Board:
    """A board under test: the shared database, its scope, and two logged-in clients."""

    db: SharedDatabase
    operator: Client
    viewer: Client
    users: dict[str, Any] = field(default_factory=dict)  # "operator", "viewer": their User rows

    @property
    def plane(self) -> DurablePlane:
        return self.db.plane

    @property
    def scope(self) -> BoardScope:
        return BoardScope(self.db.project, self.db.environment)


def grant(user: Any, scope: str, *, operate: bool = False, production: bool = False) -> ScopeGrant:
    """A scope grant (``project/environment``, ``*`` for any) held by ``user``; with
    ``production``, the user also joins the production-operators group. Deleted with the user."""
    project, _, environment = scope.partition("/")
    if production:
        user.groups.add(Group.objects.get(name=PRODUCTION_OPERATORS_GROUP))
    return ScopeGrant.objects.create(user=user, project=project, environment=environment, can_operate=operate)


@pytest.fixture
def board(request: pytest.FixtureRequest, shared_db: SharedDatabase) -> Iterator[Board]:
    """An operator (``olivia-*``, in the operators group) and a viewer (``victor-*``).

    On SQLite the test is transactional (flushed afterwards). The Postgres variant has
    no django_db mark (pytest-django would then forbid the ``postgres`` alias), so the
    logins live in the default test database, set up here, and are deleted afterwards.
    """
    if shared_db.alias != "default":
        request.getfixturevalue("default_test_database")
    users = get_user_model()
    suffix = shared_db.project[-6:]
    ensure_board_groups()
    operator = users.objects.create_user(f"olivia-{suffix}", password="pw")
    operator.groups.add(Group.objects.get(name=OPERATORS_GROUP))
    viewer = users.objects.create_user(f"victor-{suffix}", password="pw")
    viewer.groups.add(Group.objects.get(name=VIEWERS_GROUP))
    operator_client, viewer_client = Client(), Client()
    operator_client.force_login(operator)
    viewer_client.force_login(viewer)
    try:
        yield Board(shared_db, operator_client, viewer_client, {"operator": operator, "viewer": viewer})
    finally:
        if shared_db.alias != "default":
            operator_client.logout()
            viewer_client.logout()
            users.objects.filter(pk__in=[operator.pk, viewer.pk]).delete()
