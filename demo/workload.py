"""The demo workload: an initial burst, then a little more every few seconds."""

from __future__ import annotations

import random
from typing import Any

TICK_SECONDS = 5
TICKS = 720  # an hour of new work


def seed() -> dict[str, int]:
    """The first burst of demo jobs, and a fresh ticker (a previous one is drained)."""
    from .oqron import ticker

    counts = add_batch(emails=25, payments=15, reports=3, thumbnails=30)
    counts.update(publish(orders=24, signups=6))
    counts.update(fire(events=12))
    counts.update(checkouts(4))
    counts.update(quotes(10))
    ticker.drain()
    ticker.add({"n": 0}, delay=TICK_SECONDS)
    return counts


def tick(data: dict[str, Any]) -> dict[str, Any]:
    """One tick: a few more jobs, then the next tick (until ``TICKS``)."""
    from .oqron import ticker

    n = int(data.get("n", 0))
    counts = add_batch(emails=random.randint(1, 4), payments=random.randint(0, 3),
                       reports=1 if n % 6 == 0 else 0, thumbnails=random.randint(2, 6))
    counts.update(publish(orders=random.randint(0, 3), signups=1 if n % 3 == 0 else 0))
    counts.update(fire(events=random.randint(0, 2)))
    if n % 6 == 0:
        counts.update(album(n))
    if n % 24 == 12:
        counts.update(bulk_retry(n))
    if n % 12 == 2:
        counts.update(lose_hot_entries())
    if n % 2 == 0:
        counts.update(checkouts(1))
    counts.update(quotes(random.randint(0, 2)))
    if n % 12 == 11:
        counts.update(replay_quotes())
    if n + 1 < TICKS:
        ticker.add({"n": n + 1}, delay=TICK_SECONDS)
    return {"tick": n, **counts}


def add_batch(*, emails: int, payments: int, reports: int, thumbnails: int) -> dict[str, int]:
    from . import oqron

    people = ["ada", "grace", "linus", "barbara", "ken", "margaret", "dennis", "frances"]
    oqron.emails.add_bulk([{"to": f"{random.choice(people)}@example.com", "template": "welcome"}
                           for _ in range(emails)])
    payment_jobs = []
    for _ in range(payments):
        amount = random.choice([13, 26, 20, 35, 49, 52, 99, 120])  # multiples of 13 are declined
        job: dict[str, Any] = {"amount": amount, "order": random.randint(1000, 9999)}
        if random.random() > 0.1:
            job["card"] = f"4242 4242 4242 {random.randint(1000, 9999)}"
        payment_jobs.append(job)
    oqron.payments.add_bulk(payment_jobs)
    oqron.reports.add_bulk([{"report": "monthly-sales", "steps": random.choice([15, 20, 25])} for _ in range(reports)])
    oqron.thumbnails.add_bulk([{"image": f"photos/{random.randint(1, 999)}.jpg"} for _ in range(thumbnails)])
    return {"emails": emails, "payments": payments, "reports": reports, "thumbnails": thumbnails}


def publish(*, orders: int, signups: int) -> dict[str, int]:
    """Order events (keyed by customer, correlated by order) and signups."""
    from . import oqron

    customers = ["cus-ada", "cus-grace", "cus-linus", "cus-barbara", "cus-ken"]
    events = []
    for _ in range(orders):
        order = random.randint(1000, 9999)
        events.append({"payload": {"order": order, "event": random.choice(["created", "paid", "refunded"]),
                                   "amount": random.choice([13, 20, 35, 49, 99])},
                       "key": random.choice(customers), "correlation_id": f"order-{order}",
                       "headers": {"source": "checkout", "schema": "v2"}})
    oqron.order_events.publish_many(events)
    oqron.user_signups.publish_many([{"payload": {"email": f"user{random.randint(1, 999)}@example.com"},
                                      "headers": {"source": "signup-form"}} for _ in range(signups)])
    return {"order-events": orders, "user-signups": signups}


def fire(*, events: int) -> dict[str, int]:
    """Shop events to the demo webhook (delivered to the loopback receiver)."""
    from . import oqron

    deliveries = 0
    for _ in range(events):
        order = random.randint(1000, 9999)
        event = random.choice(["order.created", "order.paid", "order.paid", "user.created"])
        deliveries += len(oqron.shop_events.fire(event, {"order": order, "amount": random.choice([13, 20, 99])}))
    return {"shop-events": deliveries}


def album(n: int) -> dict[str, int]:
    """A group (docs/how-to/groups-and-batches.md): an album's thumbnails, then one email once all are done."""
    import oqronkit

    from . import oqron

    photos = [oqronkit.job_spec(oqron.thumbnails, {"image": f"albums/{n}/{i}.jpg"}) for i in range(6)]
    oqronkit.group(photos, name=f"album {n}", on_failure_policy="after_all",
                   on_complete=oqronkit.job_spec(oqron.emails, {"to": "owner@example.com", "template": "album-ready"}),
                   on_failure=oqronkit.job_spec(oqron.emails, {"to": "ops@example.com", "template": "album-failed"}))
    return {"album-photos": len(photos)}


def bulk_retry(n: int) -> dict[str, int]:
    """Every two minutes a tracked bulk operation (the board's Operations page): the
    thumbnails' dead letters retried, or the payments' gateway timeouts."""
    from oqronkit import get_engine
    from oqronkit.operations import Operations

    queue, search = ("thumbnails", "") if n % 48 == 12 else ("payments", "gateway")
    op = Operations(get_engine()).create("retry", user="demo", source="demo", queue=queue, search=search)
    return {"operation_planned": op.planned or 0}


def lose_hot_entries(n: int = 3) -> dict[str, int]:
    """A few delayed thumbnails dropped from the hot plane only, as a Redis restart drops
    them: the Plane drift page names them until the leader's reconciler signals them
    again (two passes, about 10 s), and its repairs table keeps the pass."""
    from . import oqron

    jobs = [oqron.thumbnails.add({"image": f"lost/{random.randint(1, 999)}.jpg"}, delay=60) for _ in range(n)]
    oqron.thumbnails.engine.hot.remove(oqron.thumbnails.name, [job.id for job in jobs])
    return {"lost-from-hot-plane": n}
def checkouts(count: int) -> dict[str, int]:
    """Orders, each under a correlation id of its own: the board's trace page shows one
    (``/trace/checkout-<order>/``: the checkout's run, the payment, email, order event,
    its deliveries and the webhook deliveries it caused)."""
    import oqronkit

    from . import oqron

    for _ in range(count):
        order = random.randint(10_000, 99_999)
        with oqronkit.correlate(f"checkout-{order}"):
            oqron.checkout.add({"order": order, "customer": random.choice(["cus-ada", "cus-grace", "cus-ken"])})
    return {"checkout": count}
def quotes(n: int) -> dict[str, int]:
    from . import oqron

    oqron.quotes.add_bulk([{"qty": random.randint(1, 9), "sku": f"SKU-{random.randint(100, 999)}"}
                           for _ in range(n)])
    return {"quotes": n}


def replay_quotes() -> dict[str, int]:
    """Replay the last 20 quotes (docs/how-to/replay-and-diff.md), as ``oqron replay`` would."""
    import oqronkit
    from oqronkit.replay import ReplayRefused, read_replay_set, replay

    engine = oqronkit.get_engine()
    try:
        set_id = replay(engine, handler="quotes", last=20, user="demo-ticker", source="demo")
    except ReplayRefused:  # no completed quote yet
        return {"replayed": 0}
    found = read_replay_set(engine, set_id)
    return {"replayed": len(found.pairs) if found else 0}
