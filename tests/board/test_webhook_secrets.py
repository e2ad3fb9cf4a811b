"""Secret endpoint headers on the board (issue 34, F4): the delivery page, the run API,
the webhooks and definitions pages and the definitions API show the mask, never a value,
whether the engine wrote the rows masked (a real delivery to a receiver on 127.0.0.1)
or an older version left a credential in them."""

from __future__ import annotations

import json

from django.urls import reverse

from oqronkit.clock import now_ms
from oqronkit.webhooks import HeaderSecret, new_secret
from oqronkit.webhooks.header_secrets import MASK
from oqronkit.webhooks.webhook import Webhook
from tests.board.seed import Board
from tests.board.webhook_seed import attempt, declare, fire
from tests.engine.queue.conftest import running, wait_until
from tests.receiver import receiving

API_KEY = "sk_live_9f2c41d07be3"
AUTH_TOKEN = "tok-5e0a77c1d2"
AMZ_TOKEN = "FwoGZXIvYXdzEJr//wEaDNx+q"
VALUES = (API_KEY, AUTH_TOKEN, AMZ_TOKEN)


def shows_no_value(text: str) -> bool:
    return not any(value in text for value in VALUES)


def test_a_credential_an_older_version_stored_in_a_run_is_masked_on_the_delivery_page_and_in_the_api(
        board: Board):
    billing = declare(board, endpoints=("crm",))
    delivery = fire(billing)[0]
    run_id = attempt(board, billing, delivery, headers={"x-api-key": API_KEY, "x-auth-token": AUTH_TOKEN,
                                                        "x-amz-security-token": AMZ_TOKEN, "x-tenant": "acme"})
    page = board.viewer.get(reverse("oqronboard:webhook-delivery", args=["billing", delivery])).content.decode()
    request = page.split('data-testid="attempt-request"')[1].split('data-testid="attempt-response"')[0]
    assert shows_no_value(page) and request.count(MASK) == 3 and "acme" in request
    answer = board.viewer.get(reverse("oqronboard:api-run", args=[run_id]))
    assert answer.status_code == 200 and shows_no_value(answer.content.decode())
    headers = answer.json()["run"]["request"]["headers"]
    assert headers["x-api-key"] == headers["x-auth-token"] == headers["x-amz-security-token"] == MASK
    assert headers["x-tenant"] == "acme"
    assert shows_no_value(board.viewer.get(reverse("oqronboard:run", args=[run_id])).content.decode())


def test_endpoint_headers_are_masked_on_the_webhooks_and_definitions_pages_and_in_the_api(board: Board):
    billing = declare(board, endpoints=("crm",))
    billing.hook.add_endpoint("http://127.0.0.1:9/new", id="new", allow_private=True,
                              headers={"Authorization": HeaderSecret("crm-token"), "X-Tenant": "acme"})
    now = now_ms()
    board.plane.put("webhook_endpoints:billing", "legacy", {  # as the version before header secrets wrote it
        "id": "legacy", "webhook": "billing", "url": "http://127.0.0.1:9/legacy", "events": ["**"], "enabled": True,
        "disabledReason": None, "disabledAt": None, "secretIds": None, "rateLimit": None, "allowPrivate": True,
        "headers": {"x-api-key": API_KEY, "x-amz-security-token": AMZ_TOKEN, "x-tenant": "acme"},
        "description": "", "createdAt": now, "updatedAt": now, "version": 1})
    page = board.viewer.get(reverse("oqronboard:webhooks")).content.decode()
    assert shows_no_value(page)
    legacy = page.split('data-testid="headers-billing-legacy"')[1].split("</div>")[0]
    assert f"x-api-key: {MASK}" in legacy and f"x-amz-security-token: {MASK}" in legacy and "x-tenant: acme" in legacy
    new = page.split('data-testid="headers-billing-new"')[1].split("</div>")[0]
    assert f"authorization: {MASK}" in new and "x-tenant: acme" in new
    definitions = board.viewer.get(reverse("oqronboard:definitions")).content.decode()
    assert shows_no_value(definitions) and 'data-testid="definition-webhook_endpoints:billing-legacy"' in definitions
    answer = board.viewer.get(reverse("oqronboard:api-definitions"))
    assert answer.status_code == 200 and shows_no_value(answer.content.decode())
    found = {d["id"]: d["value"] for d in answer.json()["definitions"] if d["namespace"] == "webhook_endpoints:billing"}
    assert found["legacy"]["headers"] == {"x-api-key": MASK, "x-amz-security-token": MASK, "x-tenant": "acme"}
    assert found["new"]["headers"] == {"authorization": MASK, "x-tenant": "acme"}
    assert found["new"]["secretHeaders"] == {"authorization": "crm-token"}
    assert board.plane.get("webhook_endpoints:billing", "legacy").value["headers"]["x-api-key"] == API_KEY  # read only


def test_a_real_delivery_sends_the_value_and_the_board_shows_the_mask(board: Board):
    engine = board.scope.engine
    with receiving() as receiver:
        hook = Webhook("vault", secret=new_secret(), engine=engine, schedule=[0], header_secrets={"auth": AUTH_TOKEN},
                       endpoints=[{"id": "shop", "url": receiver.url("/in"), "allow_private": True,
                                   "headers": {"X-Api-Key": API_KEY, "Authorization": HeaderSecret("auth")}}])
        [delivery] = hook.fire("order.paid", {"id": 1})
        with running(engine, poll_interval=0.05):
            wait_until(lambda: engine.durable.count("queue_job:webhook/vault") == 0)
        [got] = receiver.requests("/in")
    assert (got.headers["x-api-key"], got.headers["authorization"]) == (API_KEY, AUTH_TOKEN)
    page = board.viewer.get(reverse("oqronboard:webhook-delivery", args=["vault", delivery])).content.decode()
    assert shows_no_value(page) and "HTTP 200" in page
    request = page.split('data-testid="attempt-request"')[1].split('data-testid="attempt-response"')[0]
    assert request.count(MASK) == 2
    [run] = [r for r in engine.durable.list("runs", limit=100).records if r.value.get("jobId") == delivery]
    assert shows_no_value(json.dumps(run.value))  # the engine stored it masked
    answer = board.viewer.get(reverse("oqronboard:api-run", args=[run.id]))
    assert shows_no_value(answer.content.decode())
    assert answer.json()["run"]["request"]["headers"]["x-api-key"] == MASK
