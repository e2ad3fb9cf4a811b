"""Per-scope access (issue 34, F5): a scope a user may not see is never offered, chosen,
read or acted in; seeing and acting are granted apart, and production asks for more.
The three scopes of ``tests/board/scope_seed.py``; every test runs on SQLite and Postgres.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core import checks
from django.test import Client
from django.urls import get_resolver, reverse

from oqronboard.base.roles import VIEWERS_GROUP
from oqronboard.base.scope import BoardScope
from oqronboard.models import ScopeGrant
from tests.board.scope_seed import Scopes, audits, choose, dead_letters, switch, without_tokens
from tests.board.seed import dead_job, grant, put_jobs
from tests.board.test_access import SAMPLE, walk

PAGES = ["home", "runs", "failed-runs", "dead-letters", "definitions", "audit", "queues", "schedules", "topics",
         "webhooks", "webhook-log", "logs", "limits", "caches", "groups"]
FRAGMENTS = [("home", [], {"panel": "live"}), ("dead-letters", [], {"panel": "list"}),
             ("dead-letters", [], {"panel": "depth"}), ("dead-letters", [], {"panel": "groups"}),
             ("definitions", [], {"panel": "list"}), ("queue-jobs", ["emails"], {"panel": "counts"}),
             ("queue-jobs", ["emails"], {})]


def everything_shown(client: Client) -> str:
    bodies = [client.get(reverse(f"oqronboard:{name}")).content.decode() for name in PAGES]
    bodies += [client.get(reverse(f"oqronboard:{name}", args=args), params, HTTP_HX_REQUEST="true").content.decode()
               for name, args, params in FRAGMENTS]
    for fmt in ("csv", "json"):
        export = client.get(reverse("oqronboard:dead-export"), {"format": fmt})
        bodies.append(b"".join(export.streaming_content).decode())
    return "\n".join(bodies)


def details(client: Client, tag: str) -> list[int]:
    """The status of each of ``tag``'s detail pages, fragments and jump-box answers."""
    return [client.get(reverse("oqronboard:run", args=[f"{tag}-run"])).status_code,
            client.get(reverse("oqronboard:run-live", args=[f"{tag}-live"]), HTTP_HX_REQUEST="true").status_code,
            client.get(reverse("oqronboard:job", args=["emails", f"{tag}-d"])).status_code,
            client.get(reverse("oqronboard:jump"), {"id": f"{tag}-run"}).status_code,
            client.get(reverse("oqronboard:jump"), {"id": f"{tag}-w"}).status_code]


def test_a_scope_never_granted_is_never_offered_chosen_or_read(scopes: Scopes):
    viewer = scopes.board.viewer
    page = viewer.get(reverse("oqronboard:home")).content.decode()
    assert f'value="{scopes.board.scope.key}" selected' in page
    assert scopes.staging.key not in page and scopes.production.key not in page
    # Refused exactly as a scope the database does not hold: its existence is not told.
    unknown = viewer.post(reverse("oqronboard:switch-scope"), {"scope": f"{scopes.staging.project}/nowhere"})
    refused = viewer.post(reverse("oqronboard:switch-scope"), {"scope": scopes.production.key})
    assert refused.status_code == unknown.status_code == 400
    assert without_tokens(refused.content) == without_tokens(unknown.content)
    # A forged session value changes nothing: every page, fragment, export, detail and jump.
    choose(viewer, scopes.production)
    shown = everything_shown(viewer)
    assert "xprod" not in shown and "xmine-d" in shown
    assert details(viewer, "xprod") == [404] * 5
    assert details(viewer, "xmine")[:3] == [200, 200, 200]
    jump_missing = viewer.get(reverse("oqronboard:jump"), {"id": "nothing-here"}).content
    jump_hidden = viewer.get(reverse("oqronboard:jump"), {"id": "xprod-run"}).content
    assert without_tokens(jump_hidden.replace(b"xprod-run", b"nothing-here")) == without_tokens(jump_missing)


def test_a_grant_to_look_opens_the_scope_to_look_not_to_act(scopes: Scopes):
    operator = scopes.board.operator
    grant(scopes.board.users["operator"], f"{scopes.staging.project}/*")
    page = operator.get(reverse("oqronboard:home")).content.decode()
    assert f'value="{scopes.staging.key}"' in page and f'value="{scopes.production.key}"' in page
    assert switch(operator, scopes.staging) == 302
    shown = everything_shown(operator)
    assert "xstage-d" in shown and "xstage failure" in shown and "xmine" not in shown and "xprod" not in shown
    assert details(operator, "xstage")[:3] == [200, 200, 200]
    dead = operator.get(reverse("oqronboard:dead-letters")).content.decode()
    assert 'data-operator="0"' in dead and 'data-testid="retry-xstage-d"' not in dead
    refused = operator.post(reverse("oqronboard:dead-retry"), {"ids": ["emails:xstage-d"]})
    assert refused.status_code == 403 and b"can_operate" in refused.content
    assert dead_letters(scopes, scopes.staging) == ["xstage-d"] and audits(scopes, scopes.staging) == []
    # Back home, the configured scope is still the operator's to act in.
    assert switch(operator, scopes.board.scope) == 302
    assert operator.post(reverse("oqronboard:dead-retry"), {"ids": ["emails:xmine-d"]}).status_code == 302
    assert dead_letters(scopes, scopes.board.scope) == []


def test_every_action_refuses_a_scope_the_user_may_only_look_at(scopes: Scopes):
    """Every view marked an action (``operator_required``) is walked: 403, nothing done."""
    operator = scopes.board.operator
    grant(scopes.board.users["operator"], scopes.staging.key)
    assert switch(operator, scopes.staging) == 302
    actions = sorted({reverse(name, kwargs={k: SAMPLE[k] for k in pattern.pattern.regex.groupindex})
                      for name, _, pattern in walk(get_resolver().url_patterns)
                      if getattr(pattern.callback, "oqron_action", False)})
    assert len(actions) >= 15 and "/dead/retry/" in actions and "/caches/users/invalidate/" in actions
    for url in actions:
        response = operator.post(url, {"confirmed": "yes", "reason": "x", "ids": ["emails:xstage-d"]})
        assert response.status_code == 403, url
    assert dead_letters(scopes, scopes.staging) == ["xstage-d"] and audits(scopes, scopes.staging) == []


def test_acting_needs_a_grant_with_can_operate_and_production_its_permission(scopes: Scopes):
    operator, user = scopes.board.operator, scopes.board.users["operator"]
    grant(user, f"{scopes.staging.project}/*", operate=True)
    assert switch(operator, scopes.staging) == 302
    assert operator.post(reverse("oqronboard:dead-retry"), {"ids": ["emails:xstage-d"]}).status_code == 302
    assert dead_letters(scopes, scopes.staging) == []

    assert switch(operator, scopes.production) == 302
    refused = operator.post(reverse("oqronboard:dead-retry"), {"ids": ["emails:xprod-d"]})
    assert refused.status_code == 403 and b"oqronboard.operate_production" in refused.content
    assert dead_letters(scopes, scopes.production) == ["xprod-d"] and audits(scopes, scopes.production) == []
    assert 'data-operator="0"' in operator.get(reverse("oqronboard:dead-letters")).content.decode()

    grant(user, "unrelated/staging", production=True)  # joins production-operators
    assert operator.post(reverse("oqronboard:dead-retry"), {"ids": ["emails:xprod-d"]}).status_code == 302
    assert dead_letters(scopes, scopes.production) == [] and len(audits(scopes, scopes.production)) >= 1


def test_a_grant_never_makes_a_viewer_an_operator(scopes: Scopes):
    viewer = scopes.board.viewer
    grant(scopes.board.users["viewer"], "*/*", operate=True)
    assert switch(viewer, scopes.staging) == 302
    assert viewer.post(reverse("oqronboard:dead-retry"), {"ids": ["emails:xstage-d"]}).status_code == 403
    assert dead_letters(scopes, scopes.staging) == ["xstage-d"]


def test_a_group_grant_holds_for_each_member(scopes: Scopes):
    group = Group.objects.get(name=VIEWERS_GROUP)
    held = ScopeGrant.objects.create(group=group, project=scopes.staging.project, environment="staging")
    try:
        assert switch(scopes.board.viewer, scopes.staging) == 302
        assert "xstage-d" in scopes.board.viewer.get(reverse("oqronboard:dead-letters")).content.decode()
        assert switch(scopes.board.viewer, scopes.production) == 400
        assert switch(scopes.board.operator, scopes.staging) == 400  # not a member of viewers
    finally:
        held.delete()  # the Postgres variant's logins outlive the test


def test_a_revoked_scope_falls_back_and_acts_nowhere(scopes: Scopes):
    operator = scopes.board.operator
    held = grant(scopes.board.users["operator"], scopes.staging.key, operate=True)
    assert switch(operator, scopes.staging) == 302
    held.delete()
    page = operator.get(reverse("oqronboard:dead-letters")).content.decode()
    assert "xmine-d" in page and "xstage" not in page and 'data-testid="scope-refused"' in page
    assert 'data-operator="0"' in page
    # The page fell back to the configured scope; an action meant for staging acts in neither.
    for ids in (["emails:xstage-d"], ["emails:xmine-d"]):
        assert operator.post(reverse("oqronboard:dead-retry"), {"ids": ids}).status_code == 403
    assert dead_letters(scopes, scopes.board.scope) == ["xmine-d"] and dead_letters(scopes, scopes.staging) == [
        "xstage-d"]
    assert audits(scopes, scopes.board.scope) == []
    # Picking a scope again ends it.
    assert switch(operator, scopes.board.scope) == 302
    assert operator.post(reverse("oqronboard:dead-retry"), {"ids": ["emails:xmine-d"]}).status_code == 302


def test_the_configured_scope_can_need_a_grant_too(scopes: Scopes, settings):
    settings.OQRON_CONFIGURED_SCOPE_OPEN = False
    viewer, operator = scopes.board.viewer, scopes.board.operator
    closed = viewer.get(reverse("oqronboard:home"))
    assert closed.status_code == 403 and b'data-testid="no-scope"' in closed.content and b"xmine" not in closed.content
    assert viewer.get(reverse("oqronboard:dead-export"), {"format": "json"}).status_code == 403
    # A wildcard grant names no scope to land on: the page offers the ones it covers.
    grant(scopes.board.users["viewer"], f"{scopes.staging.project}/*")
    offered = viewer.get(reverse("oqronboard:home")).content.decode()
    assert 'data-testid="no-scope-switch"' in offered and scopes.staging.key in offered
    assert scopes.board.scope.key not in offered
    assert switch(viewer, scopes.staging) == 302
    assert "xstage-d" in viewer.get(reverse("oqronboard:dead-letters")).content.decode()
    # An exact grant is where a fresh session lands; acting in the configured scope needs can_operate.
    grant(scopes.board.users["operator"], scopes.board.scope.key)
    assert "xmine-d" in operator.get(reverse("oqronboard:dead-letters")).content.decode()
    assert operator.post(reverse("oqronboard:dead-retry"), {"ids": ["emails:xmine-d"]}).status_code == 403
    ScopeGrant.objects.filter(user=scopes.board.users["operator"]).update(can_operate=True)
    assert operator.post(reverse("oqronboard:dead-retry"), {"ids": ["emails:xmine-d"]}).status_code == 302


def test_production_is_the_setting_s_list_the_configured_scope_included(scopes: Scopes, settings):
    operator = scopes.board.operator
    settings.OQRON_PRODUCTION_ENVIRONMENTS = [scopes.board.scope.environment.upper(), "staging"]
    page = operator.get(reverse("oqronboard:dead-letters")).content.decode()
    assert "env-production" in page and 'data-operator="0"' in page
    refused = operator.post(reverse("oqronboard:dead-retry"), {"ids": ["emails:xmine-d"]})
    assert refused.status_code == 403 and b"operate_production" in refused.content
    grant(scopes.board.users["operator"], scopes.production.key, operate=True)
    assert switch(operator, scopes.production) == 302  # not in the list any more: operate and the grant suffice
    assert "env-production" not in operator.get(reverse("oqronboard:home")).content.decode()
    assert operator.post(reverse("oqronboard:dead-retry"), {"ids": ["emails:xprod-d"]}).status_code == 302
    settings.OQRON_PRODUCTION_ENVIRONMENTS = []
    assert switch(operator, scopes.board.scope) == 302
    assert operator.post(reverse("oqronboard:dead-retry"), {"ids": ["emails:xmine-d"]}).status_code == 302


def test_a_superuser_sees_and_acts_everywhere(scopes: Scopes):
    root = get_user_model().objects.create_superuser(f"root-{scopes.board.db.project[-6:]}", password="pw")
    client = Client()
    client.force_login(root)
    try:
        page = client.get(reverse("oqronboard:home")).content.decode()
        assert scopes.staging.key in page and scopes.production.key in page
        assert switch(client, scopes.production) == 302
        assert client.post(reverse("oqronboard:dead-retry"), {"ids": ["emails:xprod-d"]}).status_code == 302
        assert dead_letters(scopes, scopes.production) == []
    finally:
        root.delete()


def test_metrics_stay_on_the_configured_scope(scopes: Scopes):
    pytest.importorskip("prometheus_client")
    put_jobs(scopes.plane(scopes.production), [dead_job("emails", f"xprod-more-{i}") for i in range(4)])
    root = get_user_model().objects.create_superuser(f"root-{scopes.board.db.project[-6:]}", password="pw")
    client = Client()
    client.force_login(root)
    mine = b'oqron_queue_dead_letters{queue="emails"} 1.0'
    try:
        assert mine in client.get(reverse("oqronboard:metrics")).content
        assert switch(client, scopes.production) == 302
        assert mine in client.get(reverse("oqronboard:metrics")).content
    finally:
        root.delete()


def test_an_unreadable_scope_setting_fails_the_check(settings, monkeypatch):
    for name in ("OQRON_CONFIGURED_SCOPE_OPEN", "OQRON_PRODUCTION_ENVIRONMENTS"):
        if hasattr(settings, name):
            delattr(settings, name)
    monkeypatch.setenv("OQRON_PRODUCTION_ENVIRONMENTS", "Production, PRD")
    monkeypatch.setenv("OQRON_CONFIGURED_SCOPE_OPEN", "0")
    assert BoardScope("shop", "prd").is_production and not BoardScope("shop", "staging").is_production
    assert [m for m in checks.run_checks(tags=["oqron"]) if m.id == "oqron.E120"] == []
    monkeypatch.setenv("OQRON_CONFIGURED_SCOPE_OPEN", "maybe")
    found = [m for m in checks.run_checks(tags=["oqron"]) if m.id == "oqron.E120"]
    assert len(found) == 1 and "OQRON_CONFIGURED_SCOPE_OPEN" in found[0].msg
