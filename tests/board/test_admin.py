"""The admin lists the durable tables read-only (issue #4 extends it)."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.test import Client

from definitions.models import Record
from jobs.models import JobRecord
from oqronboard.admin import ReadOnlyRecordAdmin
from runs.models import RunRecord
from tests.board.conftest import SharedDatabase

MODELS = [RunRecord, JobRecord, Record]


def changelist(model) -> str:
    return f"/admin/{model._meta.app_label}/{model._meta.model_name}/"


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_registered_read_only(model, rf):
    model_admin = admin.site.get_model_admin(model)
    assert isinstance(model_admin, ReadOnlyRecordAdmin)
    request = rf.get("/")
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)
    assert model_admin.list_display == ("namespace", "id", "record_kind")
    assert model_admin.list_filter == ("record_kind",)
    assert model_admin.search_fields == ("id",)


@pytest.mark.django_db(transaction=True)
def test_changelists_search_and_filter(sqlite_shared_db: SharedDatabase):
    shared_db = sqlite_shared_db
    shared_db.plane.put("runs", "run-abc", {"status": "completed"})
    shared_db.plane.put("topic_msg:orders", "msg-1", {"publishedAt": 1})
    shared_db.plane.put("queue_dlq:emails", "job-dead", {"status": "failed"})
    shared_db.plane.put("cron", "nightly", {"expression": "0 3 * * *"})
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "pw"))

    response = client.get(changelist(RunRecord), {"q": "run-abc"})
    assert response.status_code == 200
    assert b"run-abc" in response.content and b"msg-1" not in response.content

    response = client.get(changelist(RunRecord), {"record_kind__exact": "message"})
    assert b"msg-1" in response.content and b"run-abc" not in response.content

    for model, row_id in ((JobRecord, b"job-dead"), (Record, b"nightly")):
        response = client.get(changelist(model))
        assert response.status_code == 200 and row_id in response.content

    # Nothing to add, no delete action, no change form.
    assert client.get(changelist(RunRecord) + "add/").status_code == 403
    assert b"delete_selected" not in client.get(changelist(RunRecord)).content
