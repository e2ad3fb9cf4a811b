"""``manage.py oqron_demo`` (run by bin/demo): the documented logins and the workload."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import authenticate
from django.core.management import call_command

from demo.management.commands.oqron_demo import Command as DemoCommand
from oqronboard.base.roles import Access, is_operator
from oqronboard.base.scope import BoardScope
from oqronboard.models import ScopeGrant
from oqronkit.engine import default_registry
from oqronkit.scheduler.declare import registry_for as scheduled_for
from oqronkit.topics.subscription import subscriptions_for
from oqronkit.topics.topic import topics_for
from oqronkit.webhooks.webhook import webhooks_for
from tests.board.conftest import SharedDatabase


@pytest.mark.django_db
def test_creates_the_demo_logins_once(django_user_model):
    out = io.StringIO()
    call_command(DemoCommand(), stdout=out)
    call_command(DemoCommand(), stdout=out)
    text = out.getvalue()
    assert "Created the demo login demo / demo" in text and "already exists" in text
    assert "Created the viewer login viewer / viewer" in text
    assert "no demo workload" in text  # the test settings use mode memory
    user = authenticate(username="demo", password="demo")
    assert user is not None and user.is_superuser and user.is_staff and is_operator(user)
    viewer = authenticate(username="viewer", password="viewer")
    assert viewer is not None and not viewer.is_staff and not is_operator(viewer)
    # "Sees everything": every scope the demo database holds is in the viewer's switcher.
    assert ScopeGrant.objects.filter(user=viewer).count() == 1
    anywhere = BoardScope("another-project", "production")
    assert Access(viewer).can_see(anywhere) and not Access(viewer).can_operate(anywhere)
    assert Access(user).can_see(anywhere) and Access(user).can_operate(anywhere)
    assert django_user_model.objects.filter(username__in=["demo", "viewer"]).count() == 2


@pytest.fixture
def own_registry():
    """The demo's queues, topics and subscriptions join the default registry: put it
    back as it was afterwards."""
    kept = [(d, dict(d)) for d in (default_registry.queues, topics_for(default_registry),
                                   subscriptions_for(default_registry), webhooks_for(default_registry),
                                   scheduled_for(default_registry))]
    try:
        yield
    finally:
        for registered, before in kept:
            registered.clear()
            registered.update(before)


@pytest.mark.django_db(transaction=True)
def test_enqueues_the_demo_workload_through_the_engine(sqlite_shared_db: SharedDatabase, own_registry):
    default_registry.queues.clear()
    out = io.StringIO()
    call_command(DemoCommand(), stdout=out)
    call_command(DemoCommand(), "--no-workload", stdout=out)
    plane = sqlite_shared_db.plane
    assert "Enqueued the demo workload" in out.getvalue()
    for queue, count in (("emails", 25), ("payments", 15), ("reports", 3), ("thumbnails", 30)):
        assert plane.count(f"queue_job:{queue}") == count, queue
    ticker = plane.list("queue_job:demo-ticker").records
    assert len(ticker) == 1 and ticker[0].value["status"] == "delayed"
    # Published to the demo topics; their groups appear once a worker subscribes them.
    assert plane.count("topic_msg:order-events") == 24 and plane.count("topic_msg:user-signups") == 6
    assert plane.get("topic", "order-events").value["partitions"] == 3
    # Fired to the demo webhook: its endpoints all on loopback, deliveries waiting for the worker.
    endpoints = {r.id: r.value for r in plane.list("webhook_endpoints:shop-events").records}
    assert set(endpoints) == {"warehouse", "crm", "legacy-erp"}
    assert all(e["url"].startswith("http://127.0.0.1:") for e in endpoints.values())
    assert plane.count("queue_job:webhook/shop-events") >= 12
    # Checkouts, each under a correlation id of its own (the trace page's demo).
    checkouts = plane.list("queue_job:checkout").records
    assert len(checkouts) == 4
    assert all(r.value["correlationId"] == f"checkout-{r.value['data']['order']}" for r in checkouts)
    assert "/trace/checkout-" in out.getvalue()
    # Every two minutes a tick starts a tracked bulk operation (the Operations page).
    from demo import workload

    workload.tick({"n": 12})
    (operation,) = [r.value for r in plane.list("operations").records]
    assert (operation["action"], operation["queues"], operation["createdBy"]) == ("retry", ["thumbnails"], "demo")


def test_the_demo_app_is_installed_only_for_the_demo():
    assert "demo" not in settings.INSTALLED_APPS
    script = (Path(settings.BASE_DIR) / "bin" / "demo").read_text()
    assert "export OQRON_DEMO=1" in script and "runworker" in script and "trap stop_worker EXIT" in script


def test_the_demo_queues_fail_sometimes_and_report_progress(own_registry):
    from demo import oqron

    assert {"emails", "payments", "reports", "thumbnails", "demo-ticker"} <= {
        q.name for q in (oqron.emails, oqron.payments, oqron.reports, oqron.thumbnails, oqron.ticker)}
    assert {(t.name, t.partitions) for t in (oqron.order_events, oqron.user_signups)} == \
        {("order-events", 3), ("user-signups", 1)}
    assert {s.queue.name for s in (oqron.bill, oqron.ship, oqron.count_order, oqron.welcome)} == {
        "order-events@billing", "order-events@shipping", "order-events@analytics", "user-signups@welcome-mail"}
    # The Schedules page is never empty in the demo.
    assert {(d.definition.kind, d.definition.name) for d in (oqron.stock_digest, oqron.price_sync)} == {
        ("cron", "stock-digest"), ("schedule", "price-sync")}
    source = Path(oqron.__file__).read_text()
    assert "ctx.progress(" in source and "raise " in source


def test_the_demo_receiver_answers_on_loopback_only():
    import threading
    import urllib.request
    from http.server import ThreadingHTTPServer

    from demo import receiver

    assert receiver.HOST == "127.0.0.1" and receiver.url("/ok").startswith("http://127.0.0.1:")
    server = ThreadingHTTPServer((receiver.HOST, 0), receiver.Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        request = urllib.request.Request(f"http://127.0.0.1:{server.server_address[1]}/ok", data=b"{}",
                                         headers={"webhook-id": "msg_1"})
        with urllib.request.urlopen(request, timeout=5) as answer:
            assert answer.status == 200 and b"msg_1" in answer.read()
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.django_db(transaction=True)
def test_the_demo_loses_hot_entries_for_the_plane_drift_page(sqlite_shared_db: SharedDatabase, own_registry):
    from demo import workload
    from oqronkit.contrib.django import engine
    from oqronkit.services.drift import plane_drift

    default_registry.queues.clear()
    call_command(DemoCommand(), stdout=io.StringIO())
    assert workload.lose_hot_entries() == {"lost-from-hot-plane": 3}
    [thumbnails] = plane_drift(engine.get_engine(), ["thumbnails"], grace_ms=0).queues
    assert thumbnails.unsignalled.count == 3 and thumbnails.delayed == 0
