"""Per-scope access in the admin (issue 34, F5): the engine tables' read-only lists and
their actions follow the board's scope grants, and the grants themselves are managed
there."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from oqronboard.admin_grants import ScopeGrantAdmin
from oqronboard.base.roles import OPERATORS_GROUP
from oqronboard.base.scope import BoardScope
from oqronboard.jobs.models import JobRecord
from oqronboard.models import ScopeGrant
from oqronkit.contrib.django import engine
from tests.board.conftest import SharedDatabase
from tests.board.scope_seed import choose
from tests.board.seed import dead_job, grant, put_jobs, queue_control
from tests.board.test_admin import changelist, key, staff

pytestmark = pytest.mark.django_db(transaction=True)


def seeded(db: SharedDatabase) -> tuple[BoardScope, BoardScope]:
    shop = f"{db.project}-shop"
    staging, production = BoardScope(shop, "staging"), BoardScope(shop, "production")
    put_jobs(db.plane, [dead_job("emails", "xmine-d")])
    for scope, tag in ((staging, "xstage"), (production, "xprod")):
        plane = engine.durable_for(scope.project, scope.environment)
        queue_control(plane, "emails")
        put_jobs(plane, [dead_job("emails", f"{tag}-d")])
    return staging, production


def retry(client: Client, row_id: str):
    return client.post(changelist(JobRecord), {"action": "retry_dead",
                                               "_selected_action": [key("queue_dlq:emails", row_id)]})


def dead(scope: BoardScope, row_id: str) -> bool:
    return engine.durable_for(scope.project, scope.environment).get("queue_dlq:emails", row_id) is not None


def test_the_lists_show_only_a_scope_the_user_may_see(sqlite_shared_db: SharedDatabase):
    _, production = seeded(sqlite_shared_db)
    client = staff("staff-operator", operator=True)
    choose(client, production)
    page = client.get(changelist(JobRecord)).content.decode()
    assert "xmine-d" in page and "xprod" not in page
    assert 'field-id">xprod-d' not in client.get(changelist(JobRecord), {"q": "xprod-d"}).content.decode()
    assert 'field-id">xmine-d' in client.get(changelist(JobRecord), {"q": "xmine-d"}).content.decode()
    # Its actions act nowhere while the session names a scope it may not see.
    assert "retry_dead" not in page
    retry(client, "xmine-d")
    assert dead(BoardScope(sqlite_shared_db.project, sqlite_shared_db.environment), "xmine-d")


def test_the_actions_follow_the_grants(sqlite_shared_db: SharedDatabase):
    staging, production = seeded(sqlite_shared_db)
    client = staff("staff-operator", operator=True)
    user = get_user_model().objects.get(username="staff-operator")
    held = grant(user, f"{staging.project}/*")
    choose(client, staging)
    page = client.get(changelist(JobRecord)).content.decode()
    assert "xstage-d" in page and "xmine" not in page and "retry_dead" not in page
    retry(client, "xstage-d")
    assert dead(staging, "xstage-d")
    held.can_operate = True
    held.save()
    assert "retry_dead" in client.get(changelist(JobRecord)).content.decode()
    retry(client, "xstage-d")
    assert not dead(staging, "xstage-d")
    audit = engine.durable_for(staging.project, staging.environment).list("audit").records
    assert [a.value["source"] for a in audit] == ["admin"]
    # Production also needs its permission.
    choose(client, production)
    assert "retry_dead" not in client.get(changelist(JobRecord)).content.decode()
    retry(client, "xprod-d")
    assert dead(production, "xprod-d")


def test_a_user_who_may_see_no_scope_gets_403(sqlite_shared_db: SharedDatabase, settings):
    seeded(sqlite_shared_db)
    settings.OQRON_CONFIGURED_SCOPE_OPEN = False
    client = staff("staff-viewer", operator=False)
    assert client.get(changelist(JobRecord)).status_code == 403


def test_grants_are_managed_in_the_admin(sqlite_shared_db: SharedDatabase):
    assert isinstance(admin.site.get_model_admin(ScopeGrant), ScopeGrantAdmin)
    root = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    client = Client()
    client.force_login(root)
    add = reverse("admin:oqronboard_scopegrant_add")
    operators = Group.objects.get_or_create(name=OPERATORS_GROUP)[0]
    both = client.post(add, {"user": root.pk, "group": operators.pk, "project": "shop", "environment": "*"})
    assert both.status_code == 200 and b"pick one" in both.content
    neither = client.post(add, {"project": "shop", "environment": "*"})
    assert neither.status_code == 200 and b"pick one" in neither.content
    bad = client.post(add, {"group": operators.pk, "project": "shop/x", "environment": "*"})
    assert bad.status_code == 200 and b"or * for any" in bad.content
    assert ScopeGrant.objects.count() == 0
    done = client.post(add, {"group": operators.pk, "project": "shop", "environment": "*", "can_operate": "on"})
    assert done.status_code == 302
    assert str(ScopeGrant.objects.get()) == "group operators: shop/* (operate)"
    again = client.post(add, {"group": operators.pk, "project": "shop", "environment": "*"})
    assert again.status_code == 200 and ScopeGrant.objects.count() == 1  # one grant per holder and scope
    listed = client.get(reverse("admin:oqronboard_scopegrant_changelist"), {"q": "operators"})
    assert b"shop/*" in listed.content
