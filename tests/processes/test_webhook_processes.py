"""Webhook deliveries across two real worker processes (redis-postgres mode, the shared
servers, a scope of its own) to a receiver on 127.0.0.1 that fails, then recovers: the
breaker both processes share opens, lets one probe through per cool-down across the
cluster, closes on the probe's success; every event is delivered, none lost, none
spending its attempts while the breaker is open. And secret headers: a worker process
sends the values its own declaration holds, which no stored row and no producer has."""

from __future__ import annotations

import itertools
import time
from collections import Counter

import pytest

from oqronkit import Engine, OqronConfig, Registry
from oqronkit.webhooks import HeaderSecret
from tests.engine.queue.conftest import wait_until
from tests.engine.webhooks.test_endpoints import stored_text
from tests.processes.test_faults import all_runs, fleet
from tests.processes.webhook_app import OPTIONS
from tests.receiver import Reply, receiving
from tests.services import drop_redis_project, require_redis

pytestmark = pytest.mark.slow


def test_the_breaker_is_shared_by_two_worker_processes_and_no_delivery_is_lost(tmp_path, scope_names,
                                                                                 pg_schema_url):
    config = OqronConfig(mode="redis-postgres", database_url=pg_schema_url, redis_url=require_redis(),
                         project=scope_names[0])
    engine = Engine(config, registry=Registry())
    events = 40
    try:
        with receiving() as receiver, fleet(config, tmp_path, app="tests.processes.webhook_app") as workers:
            hooks = engine.webhook("hooks", **OPTIONS)
            hooks.add_endpoint(receiver.url("/in"), id="shop", allow_private=True)
            receiver.script("/in", default=Reply(500, body=b"down", delay=0.05))
            workers.spawn()
            workers.spawn()
            jobs = [hooks.fire("order.paid", {"n": n})[0] for n in range(events)]
            wait_until(lambda: (hooks.breaker_state("shop") or {}).get("state") == "open", timeout=30)
            time.sleep(4.0)  # open; a probe a second (from either process), each failing
            failing = receiver.requests("/in")
            receiver.script("/in", default=Reply(200))
            try:
                wait_until(lambda: engine.durable.count("queue_job:webhook/hooks") == 0, timeout=60, interval=0.2)
            except AssertionError:
                pytest.fail(f"{engine.durable.count('queue_job:webhook/hooks')} left\n{workers.logs()}")
            assert all(p.poll() is None for p in workers.procs), workers.logs()
        runs = [r for r in all_runs(engine) if r.get("webhook") == "hooks"]
        completed = Counter(r["jobId"] for r in runs if r["status"] == "completed")
        assert set(completed) == set(jobs) and max(completed.values()) == 1  # every one, once
        assert engine.durable.count("queue_dlq:webhook/hooks") == 0
        assert len({r["workerId"] for r in runs}) == 2, "both processes delivered"
        delivered = Counter(r.headers["webhook-id"] for r in receiver.requests("/in") if r.at > failing[-1].at)
        assert len(delivered) == events
        # Before the breaker opened: the slots of both processes (2 x 3) and what passed its
        # gate just before; after: one probe per cool-down across the cluster, never two at once.
        timeline = [round(r.at - failing[0].at, 2) for r in failing]
        first_wave = [at for at in timeline if at < 0.5]
        probes = timeline[len(first_wave):]
        assert len(first_wave) <= 12, timeline
        assert 2 <= len(probes) <= 5 and all(b - a >= 0.8 for a, b in itertools.pairwise(probes)), timeline
        assert hooks.breaker_state("shop")["state"] == "closed"
        print(f"\nfailing phase: {timeline}; {len(runs)} runs for {events} events")
    finally:
        engine.close()
        drop_redis_project(config.redis_url or "", config.project)


def test_secret_headers_reach_the_wire_from_the_worker_processes_own_declaration(tmp_path, scope_names,
                                                                                 pg_schema_url, monkeypatch):
    config = OqronConfig(mode="redis-postgres", database_url=pg_schema_url, redis_url=require_redis(),
                         project=scope_names[0])
    crm_token, shop_key = "Bearer proc-crm-61c0de", "proc-shop-key-93ab17"
    engine = Engine(config, registry=Registry())
    try:
        with receiving() as receiver:
            for name, value in (("KEYED_CRM_TOKEN", crm_token), ("KEYED_SHOP_KEY", shop_key),
                                ("KEYED_SHOP_URL", receiver.url("/shop"))):
                monkeypatch.setenv(name, value)
            with fleet(config, tmp_path, app="tests.processes.webhook_secrets_app") as workers:
                workers.spawn()
                # The producer holds no header secret and declares no endpoint: ids are enough.
                keyed = engine.webhook("keyed", **OPTIONS)
                keyed.add_endpoint(receiver.url("/crm"), id="crm", allow_private=True,
                                   headers={"Authorization": HeaderSecret("crm-token")})
                keyed.fire("order.paid", {"n": 1})  # its delivery makes the worker declare "shop"
                try:
                    wait_until(lambda: len(receiver.requests("/crm")) == 1, timeout=30)
                    wait_until(lambda: keyed.endpoint("shop") is not None, timeout=10)
                    assert sorted(j.rsplit("@")[1] for j in keyed.fire("order.paid", {"n": 2})) == ["crm", "shop"]
                    wait_until(lambda: engine.durable.count("queue_job:webhook/keyed") == 0, timeout=30)
                except AssertionError:
                    pytest.fail(f"not delivered\n{workers.logs()}")
        assert [r.headers["authorization"] for r in receiver.requests("/crm")] == [crm_token, crm_token]
        [shop] = receiver.requests("/shop")
        assert (shop.headers["x-api-key"], shop.headers["x-tenant"]) == (shop_key, "acme")
        text = stored_text(engine)
        assert "x-api-key" in text and "authorization" in text  # the rows were read
        assert crm_token.split()[1] not in text and shop_key not in text
    finally:
        engine.close()
        drop_redis_project(config.redis_url or "", config.project)
