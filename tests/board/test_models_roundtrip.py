"""Guard tests joining the engine and the board (habit 11): rows written through the
engine read back whole through each unmanaged model, on SQLite and on Postgres.

If one fails, the Django models and the engine's schema have drifted apart: change
the model in runs/, jobs/ or definitions/ to match the engine's ``schema.sql`` (and run
``python manage.py makemigrations``), never the other way round.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connections, models

from oqronboard.definitions.models import Record
from oqronboard.jobs.models import JobRecord
from oqronboard.runs.models import RunRecord
from oqronkit import table_name_for_namespace
from oqronkit.contrib.django import engine
from tests.board.conftest import SharedDatabase

MODELS: list[type[models.Model]] = [RunRecord, JobRecord, Record]

RUN = {
    "id": "run-1",
    "name": "emails",
    "module": "queue",
    "status": "completed",
    "trigger": "queue",
    "input": {"to": "a@x.com"},
    "output": {"delivered": True},
    "attempts": 1,
    "progressPercent": 100,
    "logs": [{"level": "info", "msg": "sent ✓", "ts": 1751587201000}],
    "timeline": [{"ts": 1751587201000, "from": "waiting", "to": "running", "reason": "claimed"}],
    "error": None,
    "app": "my-app",
    "environment": "production",
    "workerId": "node-uuid",
    "startedAt": 1751587201000,
    "endedAt": 1751587203000,
    "durationMs": 2000,
}
JOB = {
    "id": "job-1", "queueName": "emails", "status": "waiting", "data": {"to": "a@x.com"},
    "opts": {"attempts": 3, "backoff": {"type": "exponential", "delay": 1000}},
    "attemptMade": 0, "createdAt": 1751587200000,
}
DEAD = {**JOB, "id": "job-0", "status": "failed", "attemptMade": 3, "failedReason": "SMTP 550"}
MESSAGE = {"id": "m1", "topic": "orders", "payload": {"orderId": 7}, "publishedAt": 1751587205000}
DEFINITION = {"name": "nightly", "expression": "0 3 * * *", "timezone": "UTC", "nextRunAt": 1751600000000}
CONTROL = {"name": "emails", "status": "paused", "version": 2}

# (namespace, id, value, expires_at, record_kind, model)
CASES: list[tuple[str, str, dict[str, Any], int | None, str, type[models.Model]]] = [
    ("runs", "run-1", RUN, None, "run", RunRecord),
    ("topic_msg:orders", "m1", MESSAGE, 1999999999999, "message", RunRecord),
    ("queue_job:emails", "job-1", JOB, None, "job", JobRecord),
    ("queue_dlq:emails", "job-0", DEAD, None, "dlq", JobRecord),
    ("cron", "nightly", DEFINITION, None, "definition", Record),
    ("queue", "emails", CONTROL, 1234, "control", Record),
]


def row_of(obj: models.Model) -> dict[str, Any]:
    """Every column of a model instance, by column name."""
    return {f.column: getattr(obj, f.attname) for f in obj._meta.concrete_fields if f.column}


@pytest.mark.parametrize(("namespace", "id", "value", "expires_at", "kind", "model"), CASES)
def test_engine_write_reads_back_whole_through_the_model(shared_db: SharedDatabase, namespace, id, value,
                                                         expires_at, kind, model):
    # Given a record written through the engine's API
    shared_db.plane.put(namespace, id, value, expires_at=expires_at)
    stored = shared_db.plane.get(namespace, id)
    assert stored is not None

    # When the board reads it through the unmanaged model of its table
    assert model._meta.db_table == table_name_for_namespace(namespace), (
        f"{model.__name__} reads {model._meta.db_table}, but the engine stores {namespace!r} "
        f"in {table_name_for_namespace(namespace)}."
    )
    obj = model.objects.using(shared_db.alias).get(
        pk=(shared_db.project, shared_db.environment, namespace, id)
    )

    # Then every column matches, camelCase JSON keys included
    assert row_of(obj) == {
        "project": shared_db.project,
        "environment": shared_db.environment,
        "namespace": namespace,
        "record_kind": kind,
        "id": id,
        "value": value,
        "inserted_at": stored.inserted_at,
        "expires_at": expires_at,
    }
    assert isinstance(obj.inserted_at, int) and obj.inserted_at > 1_600_000_000_000


def test_each_row_is_visible_only_through_its_own_table(shared_db: SharedDatabase):
    for namespace, id, value, expires_at, _kind, _model in CASES:
        shared_db.plane.put(namespace, id, value, expires_at=expires_at)
    seen = {
        model.__name__: sorted(
            (r.namespace, r.id)
            for r in model.objects.using(shared_db.alias).scoped(shared_db.project, shared_db.environment)
        )
        for model in MODELS
    }
    assert seen == {
        "RunRecord": [("runs", "run-1"), ("topic_msg:orders", "m1")],
        "JobRecord": [("queue_dlq:emails", "job-0"), ("queue_job:emails", "job-1")],
        "Record": [("cron", "nightly"), ("queue", "emails")],
    }


def test_an_update_through_the_engine_is_what_the_model_reads(shared_db: SharedDatabase):
    shared_db.plane.put("queue_job:emails", "job-1", JOB)
    shared_db.plane.put("queue_job:emails", "job-1", {**JOB, "status": "active", "attemptMade": 1})
    obj = JobRecord.objects.using(shared_db.alias).scoped(shared_db.project, shared_db.environment).get(
        namespace="queue_job:emails", id="job-1"
    )
    assert obj.value["status"] == "active" and obj.value["attemptMade"] == 1


def test_scopes_are_isolated(shared_db: SharedDatabase):
    other = engine.durable_for(f"{shared_db.project}-other", shared_db.environment)
    shared_db.plane.put("runs", "run-1", RUN)
    other.put("runs", "run-1", {**RUN, "status": "failed"})
    mine = RunRecord.objects.using(shared_db.alias).scoped(shared_db.project, shared_db.environment)
    theirs = RunRecord.objects.using(shared_db.alias).scoped(f"{shared_db.project}-other", shared_db.environment)
    assert [r.status for r in mine] == ["completed"]
    assert [r.status for r in theirs] == ["failed"]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_model_fields_are_the_engine_tables_columns(shared_db: SharedDatabase, model):
    connection = connections[shared_db.alias]
    with connection.cursor() as cursor:
        columns = {c.name for c in connection.introspection.get_table_description(cursor, model._meta.db_table)}
    fields = {f.column for f in model._meta.concrete_fields if f.column}
    assert fields == columns, (
        f"{model.__name__} has fields {sorted(fields)} but the engine's {model._meta.db_table} "
        f"has columns {sorted(columns)}: update the model, then run makemigrations."
    )
