"""Endpoint headers that hold credentials (issue 34, F4), in every mode: their values go on
the wire to the local receiver and never into a record, a run, a job or a breaker's
record; every reader shows the mask; a credential given at run time is refused; a worker
without the secret fails the attempt naming only its id; records an older version wrote
are masked on read, still sent, and lose the value when declared or set again."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from oqronkit import ConfigurationError, Engine, OqronConfig, Registry
from oqronkit.clock import now_ms
from oqronkit.webhooks import HeaderSecret
from oqronkit.webhooks.header_secrets import MASK, is_credential, scrubbed
from tests.receiver import Receiver, Reply

from .conftest import SECRET, running, wait_until
from .test_delivery import delivery_runs
from .test_endpoints import stored_text

SHOP_KEY = "sk_live_shop_5b1f0c8e2d"
AMZ_TOKEN = "FwoGZXIvYXdzEJr//////////wEaDNx+q"
CRM_TOKEN = "Bearer crm-7d1e9a0b44c3"
TENANT = "tenant-acme-0f93b2"
CREDENTIAL_NAMES = ["X-Api-Key", "Api-Key", "X-Auth-Token", "X-Amz-Security-Token", "Authorization", "Cookie",
                    "X-Session-Id", "X-Client-Secret", "X-Password", "X-Hub-Signature", "X-Credential", "X-Csrf-Token",
                    "Ocp-Apim-Subscription-Key", "X-Sig"]
PLAIN_NAMES = ["X-Tenant", "X-Request-Id", "X-Bypass-Cache", "Accept-Language", "X-Design", "X-Footprint", "Prefer"]


@pytest.fixture
def memory(scope_names) -> Iterator[Engine]:
    engine = Engine(OqronConfig(mode="memory", database_url=None, project=scope_names[0]), registry=Registry())
    yield engine
    engine.close()


def legacy_endpoint(endpoint_id: str, url: str, headers: dict[str, str]) -> dict:
    """An endpoint record as the version before header secrets wrote it (no secretHeaders)."""
    now = now_ms()
    return {"id": endpoint_id, "webhook": "orders", "url": url, "events": ["**"], "enabled": True,
            "disabledReason": None, "disabledAt": None, "secretIds": None, "headers": headers, "rateLimit": None,
            "allowPrivate": True, "description": "", "createdAt": now, "updatedAt": now, "version": 1}


def test_the_documented_pattern_names_credentials():
    assert all(is_credential(name.lower()) for name in CREDENTIAL_NAMES)
    assert not any(is_credential(name.lower()) for name in PLAIN_NAMES)


def test_secret_headers_go_on_the_wire_and_only_their_mask_is_stored(engine: Engine, receiver: Receiver):
    orders = engine.webhook(
        "orders", secret=SECRET, schedule=[0, 0.1], breaker={"failures": 1, "cooldown": 0.1},
        header_secrets={"crm-token": CRM_TOKEN, "tenant": TENANT},
        endpoints=[{"id": "shop", "url": receiver.url("/shop"), "allow_private": True,
                    "headers": {"X-Api-Key": SHOP_KEY, "X-Amz-Security-Token": AMZ_TOKEN, "X-Tenant": "acme"}}])
    # Marked secret explicitly: X-Tenant's name suggests nothing, its value is secret all the same.
    orders.add_endpoint(receiver.url("/crm"), id="crm", allow_private=True,
                        headers={"Authorization": HeaderSecret("crm-token"), "X-Tenant": HeaderSecret("tenant"),
                                 "X-Trace": "on"})
    receiver.script("/crm", Reply(500))  # a failed attempt and a breaker record hold the request too
    jobs = orders.fire("order.paid", {"id": 1})
    with running(engine, poll_interval=0.05):
        wait_until(lambda: engine.durable.count("queue_job:webhook/orders") == 0)
    [shop] = receiver.requests("/shop")
    assert (shop.headers["x-api-key"], shop.headers["x-amz-security-token"]) == (SHOP_KEY, AMZ_TOKEN)
    assert shop.headers["x-tenant"] == "acme"
    crm = receiver.requests("/crm")
    assert len(crm) == 2 and all((r.headers["authorization"], r.headers["x-tenant"], r.headers["x-trace"])
                                 == (CRM_TOKEN, TENANT, "on") for r in crm)
    shop_record = engine.durable.get("webhook_endpoints:orders", "shop").value
    assert shop_record["headers"] == {"x-api-key": MASK, "x-amz-security-token": MASK, "x-tenant": "acme"}
    assert shop_record["secretHeaders"] == {"x-api-key": "shop/x-api-key",
                                            "x-amz-security-token": "shop/x-amz-security-token"}
    crm_record = engine.durable.get("webhook_endpoints:orders", "crm").value
    assert crm_record["headers"] == {"authorization": MASK, "x-tenant": MASK, "x-trace": "on"}
    assert crm_record["secretHeaders"] == {"authorization": "crm-token", "x-tenant": "tenant"}
    runs = delivery_runs(engine)
    assert sorted(r["jobId"] for r in runs) == sorted([*jobs, *(j for j in jobs if j.endswith("@crm"))])
    for run in runs:
        stored = run["request"]["headers"]
        secret = ("x-api-key", "x-amz-security-token") if run["endpointId"] == "shop" else ("authorization",
                                                                                            "x-tenant")
        assert all(stored[name] == MASK for name in secret), stored
    assert engine.durable.get("webhook_cb", "orders/crm") is not None  # read below with the rest
    text = stored_text(engine)
    assert "x-amz-security-token" in text and "order.paid" in text  # the rows were read
    for value in (SHOP_KEY, AMZ_TOKEN, CRM_TOKEN, TENANT, CRM_TOKEN.split()[1]):
        assert value not in text
    endpoint = orders.endpoint("crm")
    assert endpoint is not None and endpoint.headers["authorization"] == MASK
    assert not any(v in repr(orders.endpoints()) for v in (SHOP_KEY, AMZ_TOKEN, CRM_TOKEN, TENANT))


def test_a_credential_header_given_at_run_time_is_refused_and_writes_nothing(engine: Engine):
    orders = engine.webhook("orders", secret=SECRET, header_secrets={"key": SHOP_KEY})
    orders.add_endpoint("https://shop.example/hook", id="shop", headers={"X-Tenant": "acme"})
    before = engine.durable.get("webhook_endpoints:orders", "shop").value
    for name in CREDENTIAL_NAMES:
        with pytest.raises(ConfigurationError, match="looks like a credential") as refused:
            orders.add_endpoint("https://crm.example/hook", id="crm", headers={name: SHOP_KEY})
        assert SHOP_KEY not in str(refused.value)
        with pytest.raises(ConfigurationError, match="HeaderSecret"):
            orders.update_endpoint("shop", headers={"X-Tenant": "acme", name: SHOP_KEY})
    assert orders.endpoint("crm") is None
    assert engine.durable.get("webhook_endpoints:orders", "shop").value == before
    assert SHOP_KEY not in stored_text(engine)


@pytest.mark.parametrize("value", [" leading-s3cret", "trailing-s3cret ", "line\nbreak-s3cret", "caf\u00e9-s3cret",
                                   "", "x" * 1001, 12])
def test_header_secrets_are_checked_without_quoting_them(memory: Engine, value):
    declared = [{"id": "shop", "url": "https://shop.example/", "headers": {"X-Api-Key": value}}]
    for options in ({"header_secrets": {"key": value}}, {"endpoints": declared}):
        with pytest.raises(ConfigurationError, match="visible ASCII") as refused:
            memory.webhook("orders", secret=SECRET, **options)
        if isinstance(value, str) and value.strip():
            assert value.strip() not in str(refused.value)


def test_bad_header_secret_ids_are_configuration_errors(memory: Engine):
    with pytest.raises(ConfigurationError, match="header secret id"):
        memory.webhook("orders", secret=SECRET, header_secrets={"bad id!": SHOP_KEY})
    with pytest.raises(ConfigurationError, match="does not declare"):
        memory.webhook("orders", secret=SECRET, header_secrets={"key": SHOP_KEY}, endpoints=[
            {"id": "shop", "url": "https://shop.example/", "headers": {"X-Api-Key": HeaderSecret("typo")}}])
    orders = memory.webhook("orders", secret=SECRET)
    with pytest.raises(ConfigurationError, match="header secret id"):
        orders.add_endpoint("https://shop.example/", headers={"X-Api-Key": HeaderSecret("shop/x-api-key")})


def test_a_worker_without_the_header_secret_fails_the_attempt_naming_only_its_id(engine: Engine,
                                                                                  receiver: Receiver):
    # The producer holds no header secret: at run time an id is enough, the workers resolve it.
    producer = engine.webhook("orders", secret=SECRET, schedule=[0])
    producer.add_endpoint(receiver.url("/crm"), id="crm", allow_private=True,
                          headers={"Authorization": HeaderSecret("crm-token")})
    [job_id] = producer.fire("order.paid")
    with running(engine, poll_interval=0.05):
        wait_until(lambda: engine.durable.get("queue_dlq:webhook/orders", job_id) is not None)
    assert receiver.requests() == []
    [run] = delivery_runs(engine, job_id)
    assert run["error"]["type"] == "ConfigurationError" and "'crm-token'" in run["error"]["message"]
    worker = Engine(engine.config, registry=Registry(), durable=engine.durable, hot=engine.hot)
    hook = worker.webhook("orders", secret=SECRET, schedule=[0], header_secrets={"crm-token": CRM_TOKEN})
    hook.resend(job_id)
    with running(worker, poll_interval=0.05):
        wait_until(lambda: len(receiver.requests("/crm")) == 1)
    assert receiver.requests("/crm")[0].headers["authorization"] == CRM_TOKEN
    assert delivery_runs(engine, job_id)[-1]["request"]["headers"]["authorization"] == MASK
    assert CRM_TOKEN not in stored_text(engine)


def test_a_record_an_older_version_wrote_is_masked_still_sent_and_loses_the_value_when_declared(
        engine: Engine, receiver: Receiver, caplog):
    old_token, stale, rotated = "auth-old-31d9c6e5", "key-stale-8a2f", "key-rotated-44b0"
    endpoints = "webhook_endpoints:orders"
    engine.durable.put(endpoints, "shop", legacy_endpoint("shop", receiver.url("/shop"),
                                                          {"x-api-key": SHOP_KEY, "x-tenant": "acme"}))
    engine.durable.put(endpoints, "crm", legacy_endpoint("crm", receiver.url("/crm"), {"x-auth-token": old_token}))
    engine.durable.put(endpoints, "old", legacy_endpoint("old", receiver.url("/old"), {"x-api-key": stale}))
    orders = engine.webhook("orders", secret=SECRET, header_secrets={"crm-token": old_token}, endpoints=[
        {"id": "shop", "url": receiver.url("/shop"), "allow_private": True,
         "headers": {"X-Api-Key": SHOP_KEY, "X-Tenant": "acme"}},
        {"id": "old", "url": receiver.url("/old"), "allow_private": True, "headers": {"X-Api-Key": rotated}}])
    assert [e.id for e in orders.endpoints()] == ["crm", "old", "shop"]  # declared now
    shop = engine.durable.get(endpoints, "shop").value
    assert shop["headers"] == {"x-api-key": MASK, "x-tenant": "acme"} and shop["version"] == 2
    assert shop["secretHeaders"] == {"x-api-key": "shop/x-api-key"}
    # Not declared, or declared with another value: it stays where it was, masked on every read.
    assert engine.durable.get(endpoints, "crm").value["headers"] == {"x-auth-token": old_token}
    assert engine.durable.get(endpoints, "old").value["headers"] == {"x-api-key": stale}
    assert orders.endpoint("crm").headers == {"x-auth-token": MASK}
    assert orders.endpoint("old").headers == {"x-api-key": MASK}
    with caplog.at_level(logging.WARNING, logger="oqronkit.webhooks.delivery"):
        orders.fire("order.paid")
        with running(engine, poll_interval=0.05):
            wait_until(lambda: engine.durable.count("queue_job:webhook/orders") == 0)
    assert receiver.requests("/shop")[0].headers["x-api-key"] == SHOP_KEY
    assert receiver.requests("/crm")[0].headers["x-auth-token"] == old_token  # still sent
    assert receiver.requests("/old")[0].headers["x-api-key"] == stale  # as before the upgrade
    warned = sorted((r.args[1], r.args[2]) for r in caplog.records  # type: ignore[index]
                    if getattr(r, "action", None) == "webhook.header_in_record")
    assert warned == [("crm", "x-auth-token"), ("old", "x-api-key")]
    assert not any(v in r.getMessage() for r in caplog.records for v in (old_token, stale))
    runs = "\n".join(str(r) for r in delivery_runs(engine))
    assert not any(v in runs for v in (SHOP_KEY, old_token, stale))
    orders.update_endpoint("crm", headers={"X-Auth-Token": HeaderSecret("crm-token")})
    orders.remove_endpoint("old")
    assert not any(v in stored_text(engine) for v in (SHOP_KEY, old_token, stale))
    orders.fire("order.paid")
    with running(engine, poll_interval=0.05):
        wait_until(lambda: len(receiver.requests("/crm")) == 2)
    assert receiver.requests("/crm")[1].headers["x-auth-token"] == old_token  # now from header_secrets


def test_a_value_the_client_refuses_is_masked_in_the_error_and_the_breakers_record(engine: Engine,
                                                                                    receiver: Receiver):
    refused = " key-with-a-leading-space-7c1"  # only an older version's record can hold one
    engine.durable.put("webhook_endpoints:orders", "shop",
                       legacy_endpoint("shop", receiver.url("/shop"), {"x-api-key": refused}))
    orders = engine.webhook("orders", secret=SECRET, schedule=[0], breaker={"failures": 1})
    [job_id] = orders.fire("order.paid")
    with running(engine, poll_interval=0.05):
        wait_until(lambda: engine.durable.get("queue_dlq:webhook/orders", job_id) is not None)
    [run] = delivery_runs(engine, job_id)
    assert "Illegal header value" in run["error"]["message"] and MASK in run["error"]["message"]
    breaker = orders.breaker_state("shop")
    assert MASK in breaker["lastFailure"]["error"]
    dead = engine.durable.get("queue_dlq:webhook/orders", job_id).value
    for row in (run, breaker, dead):
        assert refused.strip() not in str(row), row


def test_scrubbed_masks_a_value_as_given_and_as_quoted_bytes():
    assert scrubbed("Illegal header value b' a\\\\b'", [" a\\b"]) == f"Illegal header value b'{MASK}'"
    assert scrubbed("sent abc and abc", ["abc", ""]) == f"sent {MASK} and {MASK}"
