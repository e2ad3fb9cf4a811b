"""The admin lists the durable tables read-only, scale-safe, scoped, with audited
actions that call the engine and need the operate permission."""

from __future__ import annotations

import json

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.test import Client

from oqronboard.admin import (
    COUNT_CAP,
    CappedCountPaginator,
    JobRecordAdmin,
    KindFilter,
    NamespaceFilter,
    ReadOnlyRecordAdmin,
    RecordAdmin,
    StatusFilter,
)
from oqronboard.base.roles import OPERATORS_GROUP
from oqronboard.definitions.models import Record
from oqronboard.jobs.models import JobRecord
from oqronboard.models import ensure_board_groups
from oqronboard.runs.models import RunRecord
from oqronkit import RecordWrite
from tests.board.conftest import SharedDatabase
from tests.board.seed import dead_job, put_jobs, queue_control

MODELS = [RunRecord, JobRecord, Record]


def changelist(model) -> str:
    return f"/admin/{model._meta.app_label}/{model._meta.model_name}/"


def key(namespace: str, row_id: str) -> str:
    return json.dumps([namespace, row_id], separators=(",", ":"))


def staff(username: str, *, operator: bool) -> Client:
    ensure_board_groups()
    user = get_user_model().objects.create_user(username, password="pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(
        codename__startswith="view_", content_type__app_label="oqronboard"))
    if operator:
        user.groups.add(Group.objects.get(name=OPERATORS_GROUP))
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_registered_read_only_and_scale_safe(model, rf):
    model_admin = admin.site.get_model_admin(model)
    assert isinstance(model_admin, ReadOnlyRecordAdmin)
    request = rf.get("/")
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)
    assert model_admin.list_filter == (KindFilter, NamespaceFilter, StatusFilter)
    assert model_admin.search_fields == ("id",)
    assert model_admin.show_full_result_count is False
    assert model_admin.paginator is CappedCountPaginator
    assert model_admin.list_display_links is None
    for name in model_admin.actions or ():
        assert tuple(getattr(model_admin, name).allowed_permissions) == ("operate",), name


@pytest.mark.django_db(transaction=True)
def test_changelists_search_filter_and_stay_in_scope(sqlite_shared_db: SharedDatabase):
    db = sqlite_shared_db
    db.plane.put("runs", "run-abc", {"status": "completed", "startedAt": 1})
    db.plane.put("runs", "run-bad", {"status": "failed", "startedAt": 2})
    db.plane.put("topic", "orders", {"name": "orders"})
    db.plane.put("topic_msg:orders", "msg-1", {"publishedAt": 1})
    db.plane.put("queue_dlq:emails", "job-dead", {"status": "dead"})
    db.plane.put("cron", "nightly", {"expression": "0 3 * * *"})
    other = db.plane.scoped(project="someone-else", environment="test")
    other.put("runs", "run-foreign", {"status": "completed", "startedAt": 1})
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "pw"))

    response = client.get(changelist(RunRecord), {"q": "run-abc"})
    assert response.status_code == 200
    assert b"run-abc" in response.content and b"msg-1" not in response.content
    assert b"run-abc" not in client.get(changelist(RunRecord), {"q": "run-ab"}).content  # exact ids only

    response = client.get(changelist(RunRecord), {"record_kind__exact": "message"})
    assert b"msg-1" in response.content and b"run-abc" not in response.content
    response = client.get(changelist(RunRecord), {"status": "failed"})
    assert b"run-bad" in response.content and b"run-abc" not in response.content
    response = client.get(changelist(RunRecord), {"namespace": "topic_msg:orders"})
    assert b"msg-1" in response.content and b"run-bad" not in response.content
    assert b"run-foreign" not in client.get(changelist(RunRecord)).content  # another project's row

    for model, row_id in ((JobRecord, b"job-dead"), (Record, b"nightly")):
        response = client.get(changelist(model))
        assert response.status_code == 200 and row_id in response.content

    # Nothing to add, no delete action, no change form.
    assert client.get(changelist(RunRecord) + "add/").status_code == 403
    assert b"delete_selected" not in client.get(changelist(RunRecord)).content


@pytest.mark.django_db(transaction=True)
def test_the_retry_action_calls_the_engine_for_operators_only(sqlite_shared_db: SharedDatabase):
    db = sqlite_shared_db
    put_jobs(db.plane, [dead_job("emails", "d1"), dead_job("emails", "d2")])
    viewer = staff("staff-viewer", operator=False)
    page = viewer.get(changelist(JobRecord)).content.decode()
    assert "retry_dead" not in page
    viewer.post(changelist(JobRecord), {"action": "retry_dead", "_selected_action": [key("queue_dlq:emails", "d1")]})
    assert db.plane.get("queue_dlq:emails", "d1") is not None

    operator = staff("staff-operator", operator=True)
    page = operator.get(changelist(JobRecord)).content.decode()
    assert "retry_dead" in page and key("queue_dlq:emails", "d1").replace('"', "&quot;") in page
    response = operator.post(changelist(JobRecord), {"action": "retry_dead",
                                                     "_selected_action": [key("queue_dlq:emails", "d1")]},
                             follow=True)
    assert b"Retried 1 of 1" in response.content
    assert db.plane.get("queue_job:emails", "d1").value["status"] == "waiting"
    assert db.plane.get("queue_dlq:emails", "d2") is not None
    entry = db.plane.list("audit").records[0].value
    assert entry["source"] == "admin" and entry["user"] == "staff-operator" and entry["ids"] == ["emails/d1"]


@pytest.mark.django_db(transaction=True)
def test_the_delete_action_asks_first(sqlite_shared_db: SharedDatabase):
    db = sqlite_shared_db
    put_jobs(db.plane, [dead_job("emails", "d1")])
    operator = staff("staff-operator", operator=True)
    data = {"action": "delete_dead", "_selected_action": [key("queue_dlq:emails", "d1")]}
    confirm = operator.post(changelist(JobRecord), data)
    assert confirm.status_code == 200 and b"Delete 1 dead letter for good?" in confirm.content
    assert db.plane.get("queue_dlq:emails", "d1") is not None
    operator.post(changelist(JobRecord), {**data, "confirmed": "yes"})
    assert db.plane.get("queue_dlq:emails", "d1") is None


@pytest.mark.django_db(transaction=True)
def test_pause_and_resume_actions_on_queue_control_records(sqlite_shared_db: SharedDatabase):
    db = sqlite_shared_db
    queue_control(db.plane, "emails")
    operator = staff("staff-operator", operator=True)
    data = {"action": "pause_queues", "_selected_action": [key("queue", "emails")]}
    response = operator.post(changelist(Record), data, follow=True)
    assert b"Paused 1 queue" in response.content
    assert db.plane.get("queue", "emails").value["paused"] is True
    operator.post(changelist(Record), {**data, "action": "resume_queues"})
    assert db.plane.get("queue", "emails").value["paused"] is False


@pytest.mark.django_db(transaction=True)
def test_the_paginator_never_counts_past_its_cap(sqlite_shared_db: SharedDatabase, monkeypatch):
    from oqronboard import admin as board_admin

    db = sqlite_shared_db
    db.plane.put_many(RecordWrite("runs", f"r{i}", {"startedAt": i}) for i in range(30))
    monkeypatch.setattr(board_admin, "COUNT_CAP", 12)
    queryset = RunRecord.objects.scoped(db.project, db.environment).order_by("namespace", "id")
    assert CappedCountPaginator(queryset, 10).count == 12
    assert COUNT_CAP == 10_000


def test_the_admin_classes_pick_their_choices():
    assert JobRecordAdmin.record_kinds == ("job", "dlq")
    assert "dead" in JobRecordAdmin.statuses
    assert RecordAdmin.actions == ("pause_queues", "resume_queues")
