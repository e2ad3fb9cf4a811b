"""Deliveries against a real HTTP server on 127.0.0.1, in every mode: signed requests the
reference package verifies, a run per attempt with the request and the response (failed
attempts included), the retry schedule, Retry-After, 4xx dead at once, redirects not
followed, timeouts, the schedule spent, idempotent fires and pattern routing."""

from __future__ import annotations

import json
import time

import standardwebhooks

from oqronkit import Engine
from tests.receiver import Receiver, Reply

from .conftest import SECRET, running, wait_until


def delivery_runs(engine: Engine, job_id: str | None = None) -> list[dict]:
    runs, cursor = [], None
    while True:
        page = engine.durable.list("runs", limit=1000, cursor=cursor)
        runs += [r.value for r in page.records if r.value.get("module") == "webhook"]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    return sorted((r for r in runs if job_id is None or r["jobId"] == job_id), key=lambda r: r["startedAt"])


def hook(engine: Engine, **options):
    options.setdefault("secret", SECRET)
    options.setdefault("schedule", [0, 0.2, 0.2, 0.2])
    options.setdefault("timeout", 2)
    return engine.webhook("orders", **options)


def test_a_delivery_is_signed_recorded_and_verifiable(engine: Engine, receiver: Receiver):
    orders = hook(engine)
    endpoint = orders.add_endpoint(receiver.url("/in"), id="shop", events=["order.*"], allow_private=True,
                                   headers={"X-Tenant": "acme"})
    [job_id] = orders.fire("order.paid", {"id": 7}, correlation_id="c-1")
    assert job_id.endswith("@shop")
    with running(engine, poll_interval=0.05):
        wait_until(lambda: [r for r in delivery_runs(engine, job_id) if r["status"] == "completed"])
    [got] = receiver.requests("/in")
    payload = standardwebhooks.Webhook(SECRET).verify(got.body, got.headers)
    assert payload["type"] == "order.paid" and payload["data"] == {"id": 7}
    assert got.headers["x-tenant"] == "acme" and got.headers["content-type"] == "application/json"
    [run] = delivery_runs(engine, job_id)
    assert run["module"] == "webhook" and run["trigger"] == "webhook" and run["name"] == "webhook/orders"
    assert (run["webhook"], run["event"], run["endpointId"]) == ("orders", "order.paid", endpoint.id)
    assert run["messageId"] == got.headers["webhook-id"] and run["correlationId"] == "c-1"
    request, response = run["request"], run["response"]
    assert request["method"] == "POST" and request["url"] == receiver.url("/in")
    assert "webhook-signature" not in request["headers"] and request["headers"]["webhook-id"] == run["messageId"]
    assert json.loads(request["body"]) == payload and request["bodyTruncated"] is False
    assert response["status"] == 200 and response["body"] == "ok" and response["durationMs"] >= 0
    assert run["output"]["status"] == 200
    assert engine.durable.count("queue_job:webhook/orders") == 0


def test_failures_retry_on_the_schedule_and_the_failed_runs_keep_the_response(engine: Engine, receiver: Receiver):
    orders = hook(engine, schedule=[0, 0.3, 0.6])
    receiver.script("/in", Reply(500, body=b"boom"), Reply(502, body=b"bad gateway"))
    orders.add_endpoint(receiver.url("/in"), id="shop", allow_private=True)
    [job_id] = orders.fire("order.paid", {"id": 1})
    with running(engine, poll_interval=0.05):
        wait_until(lambda: [r for r in delivery_runs(engine, job_id) if r["status"] == "completed"])
    runs = delivery_runs(engine, job_id)
    assert [r["status"] for r in runs] == ["failed", "failed", "completed"]
    assert [r["response"]["status"] for r in runs] == [500, 502, 200]
    assert runs[0]["response"]["body"] == "boom" and runs[0]["error"]["message"] == "HTTP 500 from the endpoint"
    arrivals = [r.at for r in receiver.requests("/in")]
    assert arrivals[1] - arrivals[0] >= 0.28 and arrivals[2] - arrivals[1] >= 0.58
    assert len({r.headers["webhook-id"] for r in receiver.requests("/in")}) == 1  # one message, retried


def test_retry_after_is_honoured_for_429(engine: Engine, receiver: Receiver):
    orders = hook(engine, schedule=[0, 60])  # the schedule alone would wait a minute
    receiver.script("/in", Reply(429, headers={"Retry-After": "1"}))
    orders.add_endpoint(receiver.url("/in"), id="shop", allow_private=True)
    [job_id] = orders.fire("order.paid")
    with running(engine, poll_interval=0.05):
        wait_until(lambda: [r for r in delivery_runs(engine, job_id) if r["status"] == "completed"], timeout=15)
    first, second = receiver.requests("/in")
    assert 0.95 <= second.at - first.at < 5
    assert delivery_runs(engine, job_id)[0]["response"]["headers"]["retry-after"] == "1"


def test_a_410_is_dead_at_once_with_its_response(engine: Engine, receiver: Receiver):
    orders = hook(engine)
    receiver.script("/in", default=Reply(410, body=b"gone"))
    orders.add_endpoint(receiver.url("/in"), id="shop", allow_private=True)
    [job_id] = orders.fire("order.paid")
    with running(engine, poll_interval=0.05):
        wait_until(lambda: engine.durable.get("queue_dlq:webhook/orders", job_id) is not None)
    assert len(receiver.requests("/in")) == 1
    [run] = delivery_runs(engine, job_id)
    assert run["status"] == "failed" and run["response"]["status"] == 410 and run["response"]["body"] == "gone"
    assert "not retried" in run["error"]["message"]
    assert orders.breaker_state("shop") is None  # an answering endpoint is not a failing one


def test_a_redirect_is_a_failure_and_is_not_followed(engine: Engine, receiver: Receiver):
    orders = hook(engine, schedule=[0])
    receiver.script("/in", default=Reply(302, headers={"Location": receiver.url("/elsewhere")}))
    orders.add_endpoint(receiver.url("/in"), id="shop", allow_private=True)
    [job_id] = orders.fire("order.paid")
    with running(engine, poll_interval=0.05):
        wait_until(lambda: engine.durable.get("queue_dlq:webhook/orders", job_id) is not None)
    assert receiver.requests("/elsewhere") == []
    dead = engine.durable.get("queue_dlq:webhook/orders", job_id).value
    assert dead["attempts"] == 1 and dead["lastError"]["message"] == "HTTP 302 from the endpoint"
    assert delivery_runs(engine, job_id)[0]["response"]["headers"]["location"] == receiver.url("/elsewhere")


def test_a_timeout_fails_the_attempt_without_a_response_and_the_spent_schedule_dead_letters(
        engine: Engine, receiver: Receiver):
    orders = hook(engine, schedule=[0, 0.1], timeout=0.5)
    receiver.script("/in", default=Reply(200, delay=2))
    orders.add_endpoint(receiver.url("/in"), id="shop", allow_private=True)
    [job_id] = orders.fire("order.paid")
    started = time.monotonic()
    with running(engine, poll_interval=0.05):
        wait_until(lambda: engine.durable.get("queue_dlq:webhook/orders", job_id) is not None)
    assert time.monotonic() - started < 6
    runs = delivery_runs(engine, job_id)
    assert [r["status"] for r in runs] == ["failed", "failed"]
    assert all(r["response"] is None and "Timeout" in r["error"]["message"] for r in runs)
    assert runs[0]["request"]["url"] == receiver.url("/in")


def test_the_last_response_goes_with_the_dead_letter(engine: Engine, receiver: Receiver):
    orders = hook(engine, schedule=[0, 0.1])
    receiver.script("/in", Reply(500, body=b"first"), default=Reply(503, body=b"last"))
    orders.add_endpoint(receiver.url("/in"), id="shop", allow_private=True)
    [job_id] = orders.fire("order.paid")
    with running(engine, poll_interval=0.05):
        wait_until(lambda: engine.durable.get("queue_dlq:webhook/orders", job_id) is not None)
        wait_until(lambda: len(delivery_runs(engine, job_id)) == 2)
    dead = engine.durable.get("queue_dlq:webhook/orders", job_id).value
    last_run = delivery_runs(engine, job_id)[-1]
    assert dead["currentRunId"] == last_run["id"] and last_run["response"]["body"] == "last"
    assert dead["lastError"]["message"] == "HTTP 503 from the endpoint"


def test_fire_routes_by_pattern_skips_disabled_endpoints_and_is_idempotent(engine: Engine, receiver: Receiver):
    orders = hook(engine)
    orders.add_endpoint(receiver.url("/all"), id="all", allow_private=True)
    orders.add_endpoint(receiver.url("/paid"), id="paid", events=["order.paid"], allow_private=True)
    orders.add_endpoint(receiver.url("/deep"), id="deep", events=["order.**"], allow_private=True)
    orders.add_endpoint(receiver.url("/off"), id="off", allow_private=True)
    orders.disable_endpoint("off", "receiver retired")
    assert sorted(j.split("@")[1] for j in orders.fire("order.paid", idempotency_key="o-1")) == ["all", "deep", "paid"]
    assert sorted(j.split("@")[1] for j in orders.fire("order.refund.partial")) == ["all", "deep"]
    assert [j.split("@")[1] for j in orders.fire("user.created")] == ["all"]
    orders.update_endpoint("all", events=["order.*"])
    assert orders.fire("user.created") == []
    again = orders.fire("order.paid", idempotency_key="o-1")
    assert len(again) == 3 and engine.durable.count("queue_job:webhook/orders") == 6
    with running(engine, poll_interval=0.05):
        wait_until(lambda: engine.durable.count("queue_job:webhook/orders") == 0)
    assert len(receiver.requests("/all")) == 3 and len(receiver.requests("/paid")) == 1
    assert len(receiver.requests("/deep")) == 2 and receiver.requests("/off") == []


def test_a_delivery_to_an_endpoint_disabled_after_the_fire_is_dead_lettered(engine: Engine, receiver: Receiver):
    orders = hook(engine)
    orders.add_endpoint(receiver.url("/in"), id="shop", allow_private=True)
    [job_id] = orders.fire("order.paid")
    orders.disable_endpoint("shop", "maintenance")
    with running(engine, poll_interval=0.05):
        wait_until(lambda: engine.durable.get("queue_dlq:webhook/orders", job_id) is not None)
    assert receiver.requests("/in") == []
    assert "maintenance" in engine.durable.get("queue_dlq:webhook/orders", job_id).value["deadReason"]
    orders.enable_endpoint("shop")
    orders.resend(job_id)
    with running(engine, poll_interval=0.05):
        wait_until(lambda: engine.durable.count("queue_job:webhook/orders") == 0)
    assert len(receiver.requests("/in")) == 1


def test_a_paused_webhook_holds_its_deliveries_until_resumed(engine: Engine, receiver: Receiver):
    orders = hook(engine)
    orders.add_endpoint(receiver.url("/in"), id="shop", allow_private=True)
    orders.pause()
    orders.fire("order.paid")
    assert engine.durable.get("webhook", "orders").value["paused"] is True
    with running(engine, poll_interval=0.05):
        time.sleep(1.0)
        assert receiver.requests("/in") == []
        orders.resume()
        wait_until(lambda: len(receiver.requests("/in")) == 1)
    control = engine.durable.get("webhook", "orders")
    assert control.record_kind == "control" and control.value["paused"] is False and control.value["version"] == 3


def test_an_endpoints_rate_limit_spreads_its_deliveries_without_burning_attempts(engine: Engine, receiver: Receiver):
    orders = hook(engine, schedule=[0])  # one attempt each: a postponement must not spend it
    orders.add_endpoint(receiver.url("/in"), id="shop", allow_private=True, rate_limit=(3, 1))
    for n in range(7):
        orders.fire("order.paid", {"n": n})
    with running(engine, poll_interval=0.05):
        wait_until(lambda: engine.durable.count("queue_job:webhook/orders") == 0, timeout=15)
    arrivals = sorted(r.at for r in receiver.requests("/in"))
    assert len(arrivals) == 7 and engine.durable.count("queue_dlq:webhook/orders") == 0
    # The limit counts sends as they leave; the first ones may arrive late (the client's first connection).
    assert arrivals[3] - arrivals[0] >= 0.75 and arrivals[6] - arrivals[0] >= 1.75


def test_resend_sends_a_completed_delivery_again_with_the_same_webhook_id(engine: Engine, receiver: Receiver):
    import pytest

    from oqronkit import InvalidJob, JobNotFound

    orders = hook(engine)
    orders.add_endpoint(receiver.url("/in"), id="shop", allow_private=True)
    [job_id] = orders.fire("order.paid", {"id": 3})
    assert orders.resend(job_id).id == job_id  # still queued: the same job, nothing added
    with running(engine, poll_interval=0.05):
        wait_until(lambda: [r for r in delivery_runs(engine, job_id) if r["status"] == "completed"])
    [run] = delivery_runs(engine, job_id)
    with pytest.raises(JobNotFound, match="delivered="):
        orders.resend(job_id)
    with pytest.raises(InvalidJob):
        orders.resend(job_id, delivered={**run["input"], "endpointId": "other"})
    orders.resend(job_id, delivered=run["input"])
    with running(engine, poll_interval=0.05):
        wait_until(lambda: len(receiver.requests("/in")) == 2)
    first, second = receiver.requests("/in")
    assert first.headers["webhook-id"] == second.headers["webhook-id"] and first.body == second.body
