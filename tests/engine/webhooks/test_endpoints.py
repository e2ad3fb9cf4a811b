"""Endpoints at run time, in every mode: added, changed, disabled and enabled, removed;
persisted in webhook_endpoints:<webhook> as the board reads them; declared endpoints
never overwrite a change made at run time; bad input is refused with a clear error and
writes nothing; and no secret ever reaches a stored row."""

from __future__ import annotations

import base64

import pytest

from oqronkit import ConfigurationError, Engine, InvalidJob, JobNotFound, Registry
from oqronkit.webhooks.signing import secret_key
from tests.receiver import Receiver

from .conftest import NEW_SECRET, SECRET, running, wait_until

ENDPOINT_KEYS = {"id", "webhook", "url", "events", "enabled", "disabledReason", "disabledAt", "secretIds", "headers",
                 "secretHeaders", "rateLimit", "allowPrivate", "description", "createdAt", "updatedAt", "version"}


def test_endpoints_are_records_the_board_reads_and_changes_bump_their_version(engine: Engine):
    orders = engine.webhook("orders", secret=SECRET)
    added = orders.add_endpoint("https://shop.example/hook", id="shop", events=["order.*"], rate_limit=(10, 1),
                                headers={"X-Tenant": "acme"}, description="the shop")
    record = engine.durable.get("webhook_endpoints:orders", "shop")
    assert record.record_kind == "definition" and set(record.value) == ENDPOINT_KEYS
    assert record.value["enabled"] is True and record.value["version"] == 1 and record.value["secretIds"] is None
    assert record.value["rateLimit"] == {"count": 10, "seconds": 1.0}
    assert record.value["headers"] == {"x-tenant": "acme"} and record.value["secretHeaders"] == {}
    assert added.events == ("order.*",)
    changed = orders.update_endpoint("shop", events=["order.**", "refund.*"], url="https://shop.example/v2")
    assert changed.version == 2 and changed.url == "https://shop.example/v2"
    orders.disable_endpoint("shop", "moving house")
    value = engine.durable.get("webhook_endpoints:orders", "shop").value
    assert value["enabled"] is False and value["disabledReason"] == "moving house" and value["version"] == 3
    orders.enable_endpoint("shop")
    value = engine.durable.get("webhook_endpoints:orders", "shop").value
    assert value["enabled"] is True and value["disabledReason"] is None and value["disabledAt"] is None
    generated = orders.add_endpoint("https://other.example/")
    assert generated.id.startswith("ep_") and [e.id for e in orders.endpoints()] == sorted([generated.id, "shop"])
    assert orders.remove_endpoint(generated.id) and orders.endpoint(generated.id) is None
    with pytest.raises(JobNotFound):
        orders.disable_endpoint(generated.id)
    with pytest.raises(ConfigurationError, match="already has"):
        orders.add_endpoint("https://shop.example/again", id="shop")
    control = engine.durable.get("webhook", "orders")
    assert control.record_kind == "control" and control.value["deliveryQueue"] == "webhook/orders"
    assert control.value["secretIds"] == ["default"] and control.value["paused"] is False


def test_declared_endpoints_are_written_once_and_never_undo_a_run_time_change(engine: Engine):
    declared = [{"id": "shop", "url": "https://shop.example/hook", "events": ["order.*"]}]
    orders = engine.webhook("orders", secret=SECRET, endpoints=declared)
    orders.disable_endpoint("shop", "by an operator")
    again = Engine(engine.config, registry=Registry(), durable=engine.durable, hot=engine.hot)
    restarted = again.webhook("orders", secret=SECRET, endpoints=declared)
    assert restarted.endpoint("shop") is not None and restarted.endpoints()[0].enabled is False


def test_an_operators_handle_never_rewrites_what_the_workers_declared(engine: Engine):
    declared = [{"id": "shop", "url": "https://shop.example/hook", "events": ["order.*"]}]
    engine.webhook("orders", secret=SECRET, endpoints=declared, timeout=3).fire("order.paid")
    before = engine.durable.get("webhook", "orders").value
    board = Engine(engine.config, registry=Registry(), durable=engine.durable, hot=engine.hot)
    handle = board.webhook("orders", secret=NEW_SECRET, timeout=30, declares=False)
    handle.disable_endpoint("shop", "from the board")
    assert engine.durable.get("webhook", "orders").value == before  # its settings stay the workers'
    assert engine.durable.get("webhook_endpoints:orders", "shop").value["enabled"] is False


@pytest.mark.parametrize(("fields", "message"), [
    ({"url": "ftp://x.example/"}, "http:// or https://"),
    ({"url": "https://user:pw@x.example/"}, "credentials"),
    ({"url": "https:///nohost"}, "with a host"),
    ({"url": "https://x.example:99999/"}, "cannot be parsed"),
    ({"url": "https://x.example/a b"}, "without spaces"),
    ({"url": "https://x.example/#frag"}, "fragment"),
    ({"url": "https://x.example/", "events": []}, "events"),
    ({"url": "https://x.example/", "events": ["a..b"]}, "pattern"),
    ({"url": "https://x.example/", "headers": {"Authorization": "Bearer s3cret"}}, "looks like a credential"),
    ({"url": "https://x.example/", "headers": {"Proxy-Authorization": "Basic eA=="}}, "meant for a proxy"),
    ({"url": "https://x.example/", "headers": {"webhook-id": "x"}}, "set by the sender"),
    ({"url": "https://x.example/", "headers": {"X-A": "a\r\nb"}}, "control characters"),
    ({"url": "https://x.example/", "rate_limit": (0, 1)}, "rate_limit"),
    ({"url": "https://x.example/", "secret_ids": []}, "secret_ids"),
    ({"url": "https://x.example/", "allow_private": "yes"}, "allow_private"),
    ({"url": "https://x.example/", "colour": "blue"}, "unknown option"),
])
def test_bad_endpoints_are_refused_and_write_nothing(engine: Engine, fields, message):
    orders = engine.webhook("orders", secret=SECRET)
    options = {k: v for k, v in fields.items() if k != "url"}
    with pytest.raises(ConfigurationError, match=message):
        orders.add_endpoint(fields["url"], id="bad", **options)
    assert orders.endpoint("bad") is None


@pytest.mark.parametrize(("options", "message"), [
    ({}, "exactly one"), ({"secret": SECRET, "secrets": {"a": SECRET}}, "exactly one"),
    ({"secret": "nope!"}, "base64"), ({"secrets": {"bad id!": SECRET}}, "secret id"),
    ({"secret": SECRET, "timeout": 0}, "timeout"), ({"secret": SECRET, "schedule": []}, "schedule"),
    ({"secret": SECRET, "schedule": [0, -1]}, "negative"), ({"secret": SECRET, "retries": 100}, "retries"),
    ({"secret": SECRET, "breaker": {"failures": 0}}, "failures"),
    ({"secret": SECRET, "breaker": {"trips": 1}}, "breaker"),
    ({"secret": SECRET, "endpoints": [{"url": "https://x.example/"}]}, "an 'id'"),
])
def test_bad_declarations_are_configuration_errors(engine: Engine, options, message):
    with pytest.raises(ConfigurationError, match=message):
        engine.webhook("orders", **options)


def test_bad_fires_are_refused_and_write_nothing(engine: Engine):
    orders = engine.webhook("orders", secret=SECRET)
    orders.add_endpoint("https://shop.example/hook", id="shop")
    for event, options in [("order..paid", {}), ("order.paid", {"idempotency_key": ""}),
                           ("order.paid", {"correlation_id": "a\x00b"})]:
        with pytest.raises(InvalidJob):
            orders.fire(event, {"id": 1}, **options)
    with pytest.raises(InvalidJob):
        orders.fire("order.paid", {"bad": object()})
    assert engine.durable.count("queue_job:webhook/orders") == 0


def test_the_retry_schedule_follows_retries():
    from oqronkit.webhooks.policy import DEFAULT_SCHEDULE_MS, schedule_ms

    assert schedule_ms(None, None, "w") == DEFAULT_SCHEDULE_MS
    assert DEFAULT_SCHEDULE_MS == (0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000)
    assert schedule_ms(None, 2, "w") == (0, 5_000, 300_000)
    assert schedule_ms([0, 1], 3, "w") == (0, 1000, 1000, 1000)
    assert schedule_ms([0, 1], 0, "w") == (0,)


def stored_text(engine: Engine) -> str:
    """Every row of the three tables in this scope, as text."""
    rows = []
    for kind in ("definition", "control", "job", "dlq", "run", "state"):
        cursor = None
        while True:
            page = engine.durable.list(kind=kind, limit=1000, cursor=cursor)
            rows += [f"{r.namespace} {r.id} {r.value}" for r in page.records]
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
    return "\n".join(rows)


def test_no_secret_reaches_a_stored_row(engine: Engine, receiver: Receiver):
    orders = engine.webhook("orders", secrets={"old": SECRET, "new": NEW_SECRET}, schedule=[0, 0.1],
                            breaker={"failures": 1, "cooldown": 0.1})
    orders.add_endpoint(receiver.url("/ok"), id="ok", allow_private=True)
    orders.add_endpoint(receiver.url("/dead"), id="dead", allow_private=True, secret_ids=["new"])
    from tests.receiver import Reply

    receiver.script("/dead", default=Reply(500))
    jobs = orders.fire("order.paid", {"id": 1})
    with running(engine, poll_interval=0.05):
        wait_until(lambda: engine.durable.count("queue_job:webhook/orders") == 0)
    assert len(jobs) == 2 and engine.durable.count("queue_dlq:webhook/orders") == 1
    text = stored_text(engine)
    assert "webhook-id" in text and "order.paid" in text  # the rows were read
    for secret in (SECRET, NEW_SECRET):
        key = secret_key(secret)
        for needle in (secret, secret.removeprefix("whsec_"), base64.b64encode(key).decode(), key.hex()):
            assert needle not in text
    for got in receiver.requests():
        assert got.headers["webhook-signature"] not in text  # nor a signature made with them
    assert len(receiver.requests("/ok")[0].headers["webhook-signature"].split()) == 2  # both secrets sign
    assert len(receiver.requests("/dead")[0].headers["webhook-signature"].split()) == 1  # its own only


@pytest.mark.django_db(transaction=True)
def test_fire_on_commit_fires_after_the_commit_and_not_after_a_rollback(tmp_path):
    from django.db import transaction

    from oqronkit import OqronConfig

    engine = Engine(OqronConfig(mode="memory", database_url=None, project="on-commit"), registry=Registry())
    orders = engine.webhook("orders", secret=SECRET)
    orders.add_endpoint("https://shop.example/hook", id="shop")
    with transaction.atomic():
        orders.fire_on_commit("order.paid", {"id": 1}, idempotency_key="kept")
        assert engine.durable.count("queue_job:webhook/orders") == 0
    assert engine.durable.count("queue_job:webhook/orders") == 1
    try:
        with transaction.atomic():
            orders.fire_on_commit("order.paid", {"id": 2})
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    assert engine.durable.count("queue_job:webhook/orders") == 1
    engine.close()
