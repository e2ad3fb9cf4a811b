"""The circuit breaker in every mode: it opens after N consecutive failures, postpones
deliveries without burning their attempts, lets one probe through per cool-down, closes
on a success, survives the hot plane forgetting it (the webhook_cb record), and disables
an endpoint that fails for too long."""

from __future__ import annotations

import itertools
import time

import pytest

from oqronkit import Engine, Postpone
from oqronkit.webhooks.breaker import Breaker, BreakerSettings
from tests.receiver import Receiver, Reply

from .conftest import SECRET, running, wait_until
from .test_delivery import delivery_runs


def breaker_on(engine: Engine, **settings) -> Breaker:
    disabled: list[tuple[str, str]] = []
    found = Breaker("orders", BreakerSettings(**settings), hot=engine.hot, durable=engine.durable,
                    disable=lambda e, r: disabled.append((e, r)))
    found.disabled = disabled  # type: ignore[attr-defined]
    return found


def test_consecutive_failures_open_it_and_a_success_in_between_resets_the_count(engine: Engine):
    breaker = breaker_on(engine, failures=3, cooldown_ms=60_000)
    for outcome in ["fail", "fail", "ok", "fail", "fail"]:
        gate = breaker.before("shop", "owner", probe_ttl_ms=5000)
        if outcome == "ok":
            breaker.succeeded(gate)
        else:
            assert breaker.failed(gate, {"status": 500}) is None
    assert breaker.failed(breaker.before("shop", "owner", probe_ttl_ms=5000), {"status": 500}) == "opened"
    with pytest.raises(Postpone, match="open until"):
        breaker.before("shop", "owner", probe_ttl_ms=5000)
    record = engine.durable.get("webhook_cb", "orders/shop")
    assert record.record_kind == "state"
    assert record.value["state"] == "open" and record.value["consecutiveFailures"] == 3
    assert record.value["lastFailure"] == {"status": 500} and record.value["reopensAt"] > record.value["since"]


def test_after_the_cool_down_exactly_one_probe_goes_and_its_success_closes_it(engine: Engine):
    breaker = breaker_on(engine, failures=1, cooldown_ms=200)
    breaker.failed(breaker.before("shop", "a", probe_ttl_ms=5000), {"status": 500})
    time.sleep(0.25)
    probe = breaker.before("shop", "probe", probe_ttl_ms=5000)
    assert probe.probe
    assert engine.durable.get("webhook_cb", "orders/shop").value["state"] == "half-open"
    for owner in ("b", "c"):
        with pytest.raises(Postpone, match="another delivery probes"):
            breaker.before("shop", owner, probe_ttl_ms=5000)
    breaker.succeeded(probe)
    assert engine.durable.get("webhook_cb", "orders/shop").value["state"] == "closed"
    assert not breaker.before("shop", "b", probe_ttl_ms=5000).probe


@pytest.mark.parametrize("probe_outcome", ["failed", "succeeded"])
def test_a_probe_that_ends_between_anothers_read_and_lock_leaves_it_no_second_probe(
        engine: Engine, monkeypatch: pytest.MonkeyPatch, probe_outcome: str):
    """The race behind two probes 60 ms apart: Y reads "open, cool-down over", X probes
    and fails (reopening it) or succeeds (closing it) and releases the lock, then Y takes
    the lock. Y must read the state again: no second probe."""
    breaker = breaker_on(engine, failures=1, cooldown_ms=200)
    breaker.failed(breaker.before("shop", "a", probe_ttl_ms=5000), {"status": 500})
    time.sleep(0.25)
    acquire = engine.hot.acquire_lock
    raced: list[str] = []

    def acquire_after_a_whole_probe(name: str, owner: str, **kwargs):
        if owner == "y" and not raced:
            raced.append(owner)
            x = breaker.before("shop", "x", probe_ttl_ms=5000)
            assert x.probe
            if probe_outcome == "failed":
                breaker.failed(x, {"status": 500})
            else:
                breaker.succeeded(x)
        return acquire(name, owner, **kwargs)

    monkeypatch.setattr(engine.hot, "acquire_lock", acquire_after_a_whole_probe)
    if probe_outcome == "failed":
        with pytest.raises(Postpone, match="open until"):
            breaker.before("shop", "y", probe_ttl_ms=5000)
    else:
        assert not breaker.before("shop", "y", probe_ttl_ms=5000).probe
    assert raced
    monkeypatch.setattr(engine.hot, "acquire_lock", acquire)
    expected = "open" if probe_outcome == "failed" else "closed"
    assert engine.durable.get("webhook_cb", "orders/shop").value["state"] == expected


def test_a_failed_probe_reopens_it_for_twice_the_cool_down(engine: Engine):
    breaker = breaker_on(engine, failures=1, cooldown_ms=200, max_cooldown_ms=300)
    breaker.failed(breaker.before("shop", "a", probe_ttl_ms=5000), {"status": 500})
    time.sleep(0.25)
    assert breaker.failed(breaker.before("shop", "probe", probe_ttl_ms=5000), {"status": 503}) == "opened"
    value = engine.durable.get("webhook_cb", "orders/shop").value
    assert value["cooldownMs"] == 300 and value["state"] == "open"  # doubled, capped
    time.sleep(0.35)
    assert breaker.before("shop", "next", probe_ttl_ms=5000).probe  # the failed probe gave its turn back


def test_a_hot_plane_that_forgot_restores_the_open_breaker_from_its_record(engine: Engine):
    breaker = breaker_on(engine, failures=1, cooldown_ms=60_000)
    breaker.failed(breaker.before("shop", "a", probe_ttl_ms=5000), {"status": 500})
    engine.hot.kv_delete("webhook_cb:orders", ["shop", "shop.mark", "shop.streak"])  # a Redis restart, say
    with pytest.raises(Postpone):
        breaker.before("shop", "b", probe_ttl_ms=5000)


def test_an_endpoint_failing_for_longer_than_disable_after_is_disabled(engine: Engine):
    breaker = breaker_on(engine, failures=100, disable_after_ms=300)
    assert breaker.failed(breaker.before("shop", "a", probe_ttl_ms=5000), {"status": 500}) is None
    time.sleep(0.35)
    assert breaker.failed(breaker.before("shop", "a", probe_ttl_ms=5000), {"error": "ConnectError"}) == "disabled"
    [(endpoint, reason)] = breaker.disabled  # type: ignore[attr-defined]
    assert endpoint == "shop" and "failing for" in reason and "ConnectError" in reason


def test_deliveries_wait_out_an_open_breaker_without_burning_attempts(engine: Engine, receiver: Receiver):
    # Eight attempts: a delivery may fail in the first wave, once more just before the
    # breaker opens and as a probe or three (a probe is a real request, so an attempt);
    # the dozens of postponements while it is open must spend none.
    orders = engine.webhook("orders", secret=SECRET, schedule=[0] + [0.05] * 7, timeout=2, concurrency=4,
                            breaker={"failures": 3, "cooldown": 0.6, "max_cooldown": 0.6})
    orders.add_endpoint(receiver.url("/in"), id="shop", allow_private=True)
    receiver.script("/in", default=Reply(500, body=b"down", delay=0.05))
    jobs = [orders.fire("order.paid", {"n": n})[0] for n in range(12)]
    with running(engine, poll_interval=0.05):
        wait_until(lambda: (orders.breaker_state("shop") or {}).get("state") == "open")
        time.sleep(2.0)  # open, a probe, open again, another probe...
        failing = receiver.requests("/in")
        receiver.script("/in", default=Reply(200))
        wait_until(lambda: engine.durable.count("queue_job:webhook/orders") == 0, timeout=20)
    assert engine.durable.count("queue_dlq:webhook/orders") == 0  # none spent waiting
    # Until the breaker opens, the slots (4) and those that passed its gate just before
    # (4 more at most) fail; after that, one probe per cool-down, never two at once.
    timeline = [round(r.at - failing[0].at, 2) for r in failing]
    first_wave = [at for at in timeline if at < timeline[0] + 0.3]
    assert len(first_wave) <= 8, (timeline, [r.body[-12:] for r in failing])
    probes = timeline[len(first_wave):]
    assert 1 <= len(probes) <= 4 and all(b - a >= 0.5 for a, b in itertools.pairwise(probes)), timeline
    assert orders.breaker_state("shop")["state"] == "closed"
    for job_id in jobs:
        runs = delivery_runs(engine, job_id)
        # At most: the first wave, one more before it opened, each probe it was, the success
        # (the dozens of postponements add none).
        assert [r["status"] for r in runs][-1] == "completed" and len(runs) <= 3 + len(probes)


def test_a_continuously_failing_endpoint_is_disabled_with_the_reason(engine: Engine, receiver: Receiver):
    orders = engine.webhook("orders", secret=SECRET, schedule=[0, 0.1], retries=30, timeout=2, concurrency=1,
                            breaker={"failures": 2, "cooldown": 0.2, "disable_after": 1})
    orders.add_endpoint(receiver.url("/in"), id="shop", allow_private=True)
    receiver.script("/in", default=Reply(503))
    [job_id] = orders.fire("order.paid")
    with running(engine, poll_interval=0.05):
        wait_until(lambda: not orders.endpoint("shop").enabled, timeout=15)
        wait_until(lambda: engine.durable.get("queue_dlq:webhook/orders", job_id) is not None, timeout=15)
    endpoint = orders.endpoint("shop")
    assert endpoint.disabled_reason.startswith("failing for") and "HTTP 503" in endpoint.disabled_reason
    record = engine.durable.get("webhook_endpoints:orders", "shop").value
    assert record["enabled"] is False and record["disabledAt"] > 0
    assert orders.fire("order.paid") == []  # a disabled endpoint gets no new deliveries
    orders.enable_endpoint("shop")
    assert orders.breaker_state("shop")["state"] == "closed"
