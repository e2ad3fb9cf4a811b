"""Per-scope access through the JSON API (issue 34, F5): sessions follow their user's
grants; a token acts as its user and may be limited to scopes (narrower, never wider);
``OQRON_API_TOKENS``' three forms and its environment syntax; unusable entries."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.core import checks
from django.test import Client
from django.urls import reverse

from oqronboard.base.scope import ScopePattern
from oqronboard.base.tokens import TokenHolder, holder, token_holders
from tests.board.scope_seed import Scopes, audits, choose, dead_letters
from tests.board.seed import grant

TOKEN = "scoped-" + "s" * 40


def get(client: Client, name: str, scope: str | None = None, token: str | None = None, **kwargs: str):
    params = {"scope": scope} if scope else {}
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return client.get(reverse(f"oqronboard:{name}", kwargs=kwargs or None), params, headers=headers)


def retry(client: Client, ids: list[str], scope: str | None = None, token: str | None = None):
    url = reverse("oqronboard:api-dead-retry") + (f"?scope={scope}" if scope else "")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return client.post(url, json.dumps({"ids": ids}), content_type="application/json", headers=headers)


def dead_ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["results"]]


def name(scopes: Scopes, who: str) -> str:
    return scopes.board.users[who].get_username()


def test_a_session_reads_only_what_its_user_may_see(scopes: Scopes):
    viewer = scopes.board.viewer
    refused = get(viewer, "api-dead", scopes.production.key)
    unknown = get(viewer, "api-dead", f"{scopes.production.project}/nowhere")
    assert refused.status_code == unknown.status_code == 400 and refused.json() == unknown.json()
    choose(viewer, scopes.production)  # a forged switcher value reads the configured scope
    assert dead_ids(get(viewer, "api-dead")) == ["xmine-d"]
    assert get(viewer, "api-run", run_id="xprod-run").status_code == 404
    assert get(viewer, "api-job", queue="emails", job_id="xprod-d").status_code == 404
    grant(scopes.board.users["viewer"], scopes.production.key)
    assert dead_ids(get(viewer, "api-dead", scopes.production.key)) == ["xprod-d"]
    assert dead_ids(get(viewer, "api-dead")) == ["xprod-d"]  # the session's choice, now open


def test_a_session_acts_only_where_its_user_may(scopes: Scopes):
    operator, user = scopes.board.operator, scopes.board.users["operator"]
    grant(user, scopes.staging.key)
    refused = retry(operator, ["emails:xstage-d"], scopes.staging.key)
    assert refused.status_code == 403 and "can_operate" in refused.json()["error"]
    assert dead_letters(scopes, scopes.staging) == ["xstage-d"] and audits(scopes, scopes.staging) == []
    # Chosen in the switcher, then revoked: no fallback to the configured scope for an action.
    choose(operator, scopes.production)
    assert retry(operator, ["emails:xmine-d"]).status_code == 403
    assert dead_letters(scopes, scopes.board.scope) == ["xmine-d"]
    grant(user, f"{scopes.staging.project}/*", operate=True)
    assert retry(operator, ["emails:xstage-d"], scopes.staging.key).json()["retried"] == 1
    production = retry(operator, ["emails:xprod-d"])  # the session's production scope, now visible
    assert production.status_code == 403 and "operate_production" in production.json()["error"]
    assert dead_letters(scopes, scopes.production) == ["xprod-d"]


def test_a_plain_token_carries_its_users_own_grants(scopes: Scopes, settings):
    settings.OQRON_API_TOKENS = {TOKEN: name(scopes, "operator")}
    client = Client()
    assert dead_ids(get(client, "api-dead", token=TOKEN)) == ["xmine-d"]  # the configured scope
    assert get(client, "api-dead", scopes.staging.key, token=TOKEN).status_code == 400
    grant(scopes.board.users["operator"], scopes.staging.key, operate=True)
    assert dead_ids(get(client, "api-dead", scopes.staging.key, token=TOKEN)) == ["xstage-d"]
    assert retry(client, ["emails:xstage-d"], scopes.staging.key, token=TOKEN).json()["retried"] == 1
    assert [a.value["source"] for a in audits(scopes, scopes.staging)] == ["api"]


def test_a_token_limited_to_scopes_sees_and_acts_only_there(scopes: Scopes, settings):
    settings.OQRON_API_TOKENS = {TOKEN: f"{name(scopes, 'operator')}:{scopes.staging.key}"}
    grant(scopes.board.users["operator"], "*/*", operate=True, production=True)  # the user may do anything
    client = Client()
    # No ?scope=: the first scope the token names (the configured one is outside its limit).
    assert dead_ids(get(client, "api-dead", token=TOKEN)) == ["xstage-d"]
    for elsewhere in (scopes.board.scope.key, scopes.production.key):
        assert get(client, "api-dead", elsewhere, token=TOKEN).status_code == 400
        assert retry(client, ["emails:xprod-d", "emails:xmine-d"], elsewhere, token=TOKEN).status_code == 400
    assert dead_letters(scopes, scopes.production) == ["xprod-d"] and dead_letters(scopes, scopes.board.scope) == [
        "xmine-d"]
    assert retry(client, ["emails:xstage-d"], token=TOKEN).json()["retried"] == 1


def test_a_token_never_widens_its_user(scopes: Scopes, settings):
    settings.OQRON_API_TOKENS = {TOKEN: {"user": name(scopes, "operator"),
                                         "scopes": [f"{scopes.staging.project}/*"]}}
    client = Client()
    nowhere = get(client, "api-dead", token=TOKEN)
    assert nowhere.status_code == 403 and "?scope=" in nowhere.json()["error"]
    assert get(client, "api-dead", scopes.staging.key, token=TOKEN).status_code == 400
    grant(scopes.board.users["operator"], scopes.staging.key)  # to look only
    assert dead_ids(get(client, "api-dead", scopes.staging.key, token=TOKEN)) == ["xstage-d"]
    assert retry(client, ["emails:xstage-d"], scopes.staging.key, token=TOKEN).status_code == 403
    assert dead_letters(scopes, scopes.staging) == ["xstage-d"]


def test_a_superusers_token_keeps_its_limit(scopes: Scopes, settings):
    root = get_user_model().objects.create_superuser(f"root-{scopes.board.db.project[-6:]}", password="pw")
    try:
        settings.OQRON_API_TOKENS = {TOKEN: f"{root.get_username()}:{scopes.production.key}"}
        client = Client()
        assert get(client, "api-dead", scopes.staging.key, token=TOKEN).status_code == 400
        assert retry(client, ["emails:xprod-d"], token=TOKEN).json()["retried"] == 1
    finally:
        root.delete()


def test_the_environment_form(settings, monkeypatch):
    if hasattr(settings, "OQRON_API_TOKENS"):
        del settings.OQRON_API_TOKENS
    monkeypatch.setenv("OQRON_API_TOKENS", f"{'a' * 24}=alice, {'b' * 24}=ci-bot:shop/production:shop/*:*/staging")
    assert dict(token_holders()) == {
        "a" * 24: TokenHolder("alice"),
        "b" * 24: TokenHolder("ci-bot", (ScopePattern("shop", "production"), ScopePattern("shop", "*"),
                                         ScopePattern("*", "staging")))}


@pytest.mark.parametrize("value", ["", "alice:", "alice:shop", "alice:shop/pro duction", ":shop/production",
                                   {"user": "alice", "scopes": []}, {"user": "alice", "scopes": "shop/x"},
                                   {"scopes": ["shop/x"]}, 42])
def test_an_unusable_entry_is_named_by_check_and_never_authenticates(value, settings, db):
    with pytest.raises(ValueError):
        holder(value)
    settings.OQRON_API_TOKENS = {TOKEN: value}
    found = [m for m in checks.run_checks(tags=["oqron"]) if m.id == "oqron.E120"]
    assert len(found) == 1 and "entry 1" in found[0].msg and TOKEN not in found[0].msg
    response = Client().get(reverse("oqronboard:api-queues"), headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 401


def test_the_readable_forms(settings):
    assert holder("alice") == TokenHolder("alice")
    assert holder({"user": "alice"}) == TokenHolder("alice")
    assert holder({"user": "alice", "scopes": ["a/b"]}) == holder("alice:a/b") == \
        TokenHolder("alice", (ScopePattern("a", "b"),))
    settings.OQRON_PRODUCTION_ENVIRONMENTS = "prod, Live"
    settings.OQRON_API_TOKENS = {TOKEN: "alice:*/*"}
    assert [m for m in checks.run_checks(tags=["oqron"]) if m.id == "oqron.E120"] == []
