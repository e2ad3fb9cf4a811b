"""Run inside the live board's Django (``manage.py shell -c``): the two users, and the
workload enqueued through the engine's public API."""

from __future__ import annotations

from tests.browser.harness import PASSWORDS

# The groups the standalone project's ``migrate`` creates (oqronboard/base/roles.py):
# viewers hold ``oqronboard.view_board``, operators also ``oqronboard.operate``, and
# production-operators also ``oqronboard.operate_production``: the live board's
# environment is ``production`` (harness.ENVIRONMENT), where acting needs it.
GROUPS = {"operator": "production-operators", "viewer": "viewers"}


def create_users() -> None:
    """``operator`` (in the production-operators group: may act) and ``viewer`` (may only look)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    users = get_user_model()
    for name, group_name in GROUPS.items():
        if not users.objects.filter(username=name).exists():
            users.objects.create_user(name, f"{name}@example.com", PASSWORDS[name])
        group = Group.objects.filter(name=group_name).first()
        if group is None:
            raise RuntimeError(f"migrate did not create the {group_name!r} group the board's roles rely on")
        users.objects.get(username=name).groups.add(group)


def enqueue(*, flaky: int = 0, steady: int = 0, slow: int = 0) -> None:
    """Jobs for the test queues (see ``tests/browser/workload/oqron.py``)."""
    from oqronkit.contrib.django import engine
    from tests.browser.workload import oqron

    engine.get_engine()  # the default engine, configured from the settings
    for queue, items in (
        (oqron.flaky, [{"order": 4100 + n, "customer": f"cus-{n:03d}"} for n in range(flaky)]),
        (oqron.steady, [{"to": f"user{n}@example.com", "template": "receipt"} for n in range(steady)]),
        (oqron.slow, [{"report": "monthly-sales", "batch": n} for n in range(slow)]),
    ):
        if items:
            queue.add_bulk(items)


HOSTILE = "<script>alert(1)</script>"


def publish(*, plain: int = 0, hostile: int = 0) -> list[str]:
    """Messages for the ``events`` topic: plain ones, and hostile ones whose key, header
    and payload are markup (and whose delivery to ``mailer`` fails)."""
    from oqronkit.contrib.django import engine
    from tests.browser.workload import oqron

    engine.get_engine()
    keys = ("alice", "bob", "carol", "dave")  # partitions 1, 0, 1, 0 of two (crc32)
    items = [{"payload": {"n": n, "note": f"plain {n}"}, "key": keys[n % 4], "correlation_id": f"c-{n}",
              "headers": {"source": "browser-test"}} for n in range(plain)]
    items += [{"payload": {"note": HOSTILE, "fail": True}, "key": HOSTILE, "headers": {HOSTILE: HOSTILE},
               "correlation_id": "c-hostile"} for _ in range(hostile)]
    return oqron.events.publish_many(items)


def fire_webhooks(base_url: str, *, count: int = 3) -> list[str]:
    """Endpoints ``ok`` and ``hostile`` of the ``hooks`` webhook at ``base_url`` (a
    receiver on 127.0.0.1), then ``count`` events: each to both endpoints."""
    from oqronkit.contrib.django import engine
    from tests.browser.workload import oqron

    engine.get_engine()
    for endpoint in ("ok", "hostile"):
        if oqron.hooks.endpoint(endpoint) is None:
            oqron.hooks.add_endpoint(f"{base_url}/{endpoint}", id=endpoint, events=["order.*"])
    return [i for n in range(count) for i in oqron.hooks.fire("order.paid", {"order": n})]


def checkout(correlation_id: str) -> None:
    """One ``checkout`` job under ``correlation_id`` (what its handler makes inherits it)."""
    import oqronkit
    from oqronkit.contrib.django import engine
    from tests.browser.workload import oqron

    engine.get_engine()
    with oqronkit.correlate(correlation_id):
        oqron.checkout.add({"order": 7001})


def history(queue: str, runs: int) -> None:
    """``runs`` completed runs of ``queue`` (one a minute, 10 to 10+runs minutes ago, as a
    worker writes them) rolled up through the engine's API, from a watermark an hour back."""
    from oqronkit import RecordWrite
    from oqronkit.clock import now_ms
    from oqronkit.contrib.django import engine
    from oqronkit.namespaces import METRICS_STATE
    from oqronkit.queues.runs import finish_run, new_run

    planes = engine.get_engine()
    now = now_ms()
    writes = []
    for n in range(runs):
        started = now - (10 + n) * 60_000
        run = new_run(name=queue, module="queue", trigger="queue", input={"n": n}, attempts=1, app="browser",
                      environment="production", worker_id="browser", job_id=f"history-{n}", started_at=started,
                      extra={"waitMs": 40 + n})
        finish_run(run, "completed", output=None, at=started + 250 + 10 * n)
        writes.append(RecordWrite("runs", run["id"], run))
    planes.durable.put_many(writes)
    planes.durable.put(METRICS_STATE, "rollup", {"next": now - now % 60_000 - 3_600_000})
    planes.rollup_history()
