"""Per-scope access through the JSON API (issue 34, F5): sessions and tokens follow
their user's grants."""

from __future__ import annotations

import json

from django.test import Client
from django.urls import reverse

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
