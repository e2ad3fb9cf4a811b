"""The demo's queues, discovered by ``manage.py runworker`` (``OQRON_DEMO=1`` installs
this app; ``bin/demo`` sets it).

- ``emails``: quick, fails about one time in four (an SMTP error), retried twice:
  failed runs, retries and some dead letters.
- ``payments``: fails in a few distinct ways (a declined card, a gateway timeout, a
  missing field): dead letters that group by error fingerprint.
- ``reports``: slow (about 20 s), reports progress and logs as it goes: the live
  progress bar.
- ``thumbnails``: fast and almost always fine: throughput.
- ``checkout``: one order each, added under a correlation id of its own
  (``checkout-<order>``); its handler adds a payment and an email, publishes an order
  event and fires a webhook, all of which inherit the id: the board's trace page
  (``/trace/checkout-<order>/``) shows them nested under the checkout's run.
- ``demo-ticker``: keeps the demo alive, adding a handful of jobs every few seconds for
  an hour (:func:`demo.workload.tick`).

Topics (the board's Topics page):

- ``order-events`` (3 partitions, keyed by customer): group ``billing`` rejects about
  one order in six (retried once, then a dead letter of the group), ``shipping`` is
  slow, ``analytics`` quick;
- ``user-signups``: group ``welcome-mail``.

A webhook (the board's Webhooks page), ``shop-events``, delivering to the demo's loopback
receiver (:mod:`demo.receiver`, started by ``bin/demo``): endpoint ``warehouse`` always
answers, ``crm`` fails about one time in three, ``legacy-erp`` points at a port nobody
listens on, so its breaker opens (and probes every cool-down).

A cron and a schedule (the board's Schedules page), run by the worker's leader:
``stock-digest`` every minute, and ``price-sync`` every 45 s, which fails about one
time in five (a price feed timeout).

A replayable queue (the board's Replays page): ``quotes`` prices an order from its input
and the current price list, which changes every three minutes; every minute the ticker
replays the last 20 quotes, so the replay sets show identical pairs and, when the price
list has changed since, changed ones with their diff (:func:`demo.workload.replay_quotes`).

A cache and a rate limiter (the board's Caches and Limits pages): ``thumbnails`` reads
each image's metadata through the ``image-meta`` cache (hits, misses, fetches), and
``payments`` checks the ``card-charges`` limiter per card (5 a minute; a card refused
three times in five minutes is banned for ten), logging a warning when it would refuse.
"""

from __future__ import annotations

import random
import time
from datetime import timedelta
from typing import Any

import oqronkit

from . import receiver

FAST_RETRY = {"type": "fixed", "delay": 2}

emails = oqronkit.queue("emails", concurrency=4, retries=2, backoff=FAST_RETRY)
payments = oqronkit.queue("payments", concurrency=3, retries=1, backoff=FAST_RETRY)
reports = oqronkit.queue("reports", concurrency=2, retries=1, backoff=FAST_RETRY, lease=60)
thumbnails = oqronkit.queue("thumbnails", concurrency=4, retries=2, backoff=FAST_RETRY)
ticker = oqronkit.queue("demo-ticker", concurrency=1, retries=0)
checkout = oqronkit.queue("checkout", concurrency=2, retries=1, backoff=FAST_RETRY)
# Safe to run again: a quote only computes (replayable=True is the author's promise of that).
quotes = oqronkit.queue("quotes", concurrency=2, retries=0, replayable=True)

# A demo secret, fixed so a receiver could verify; a real one comes from the environment.
DEMO_WEBHOOK_SECRET = "whsec_ZGVtby1vbmx5LWRvLW5vdC11c2UtaW4tcHJvZHVjdGlvbg=="
shop_events = oqronkit.webhook(
    "shop-events", secret=DEMO_WEBHOOK_SECRET, timeout=5, schedule=[0, 2, 10, 30], allow_private=True,
    breaker={"failures": 3, "cooldown": 20, "max_cooldown": 120},
    endpoints=[{"id": "warehouse", "url": receiver.url("/ok"), "events": ["order.*"]},
               {"id": "crm", "url": receiver.url("/flaky"), "events": ["order.paid", "user.**"]},
               # Port 9 (discard) on loopback: refused at once, so the breaker opens.
               {"id": "legacy-erp", "url": "http://127.0.0.1:9/erp", "events": ["order.**"]}])

image_meta = oqronkit.cache("image-meta", ttl=30, tags=["images"])
card_charges = oqronkit.rate_limit("card-charges", limit=5, period=60, ban=(3, 300, 600), dry_run=True)

order_events = oqronkit.topic("order-events", partitions=3, retention=timedelta(days=2))
user_signups = oqronkit.topic("user-signups", retention=timedelta(days=2))


class InvoiceRejected(Exception):
    pass


@order_events.subscribe("billing", start_from="earliest", concurrency=2, retries=1, backoff=FAST_RETRY)
def bill(ctx: Any) -> dict[str, Any]:
    time.sleep(random.uniform(0.05, 0.3))
    order = ctx.data.get("order", 0)
    if order % 6 == 0:
        raise InvoiceRejected(f"invoice service rejected order {order}: VAT id missing for {ctx.message.key}")
    return {"invoiced": order}


@order_events.subscribe("shipping", start_from="earliest", concurrency=2)
def ship(ctx: Any) -> dict[str, Any]:
    time.sleep(random.uniform(0.3, 1.5))
    ctx.log("info", f"label printed for order {ctx.data.get('order')}")
    return {"carrier": random.choice(["DHL", "UPS", "PostNL"])}


@order_events.subscribe("analytics", start_from="earliest", concurrency=4)
def count_order(ctx: Any) -> None:
    return None


@user_signups.subscribe("welcome-mail", start_from="earliest", concurrency=2)
def welcome(ctx: Any) -> dict[str, Any]:
    time.sleep(random.uniform(0.05, 0.2))
    return {"sent_to": ctx.data.get("email")}


@emails.handler
def send_email(ctx: Any) -> dict[str, Any]:
    time.sleep(random.uniform(0.1, 0.8))
    if random.random() < 0.25:
        server = random.choice(["mx1", "mx2", "mx3"])
        raise ConnectionError(f"SMTP server {server}.example.com refused the connection (421 try again later)")
    ctx.log("info", f"delivered to {ctx.data.get('to')}")
    return {"delivered": True, "to": ctx.data.get("to")}


class CardDeclined(Exception):
    pass


class GatewayTimeout(Exception):
    pass


@payments.handler
def charge(ctx: Any) -> dict[str, Any]:
    time.sleep(random.uniform(0.2, 1.0))
    data = ctx.data
    if "card" not in data:
        raise KeyError("card")
    amount = data.get("amount", 0)
    if card_charges.check(f"card:{str(data['card'])[-4:]}").limited:  # a dry run: counted, never refused
        ctx.log("warning", "this card is over 5 charges a minute")
    if amount % 13 == 0:
        raise CardDeclined(f"card ending {data['card'][-4:]} declined for {amount} EUR (do not honour)")
    if random.random() < 0.15:
        raise GatewayTimeout(f"payment gateway did not answer within {random.randint(10, 30)} s")
    ctx.log("info", f"charged {amount} EUR")
    return {"charged": amount, "currency": "EUR"}


@reports.handler
def build_report(ctx: Any) -> dict[str, Any]:
    steps = int(ctx.data.get("steps", 20))
    for step in range(steps):
        if ctx.cancelled:
            ctx.log("warning", f"stopped at section {step} (cancelled)")
            return {"sections": step, "stopped": True}
        time.sleep(1.0)
        ctx.progress(100 * (step + 1) / steps, f"section {step + 1} of {steps}")
        if step % 4 == 0:
            ctx.log("info", f"rendered section {step + 1}")
    if random.random() < 0.2:
        raise RuntimeError("the PDF renderer crashed while writing the appendix")
    return {"sections": steps, "pages": steps * 3}


@thumbnails.handler
def make_thumbnail(ctx: Any) -> dict[str, Any]:
    time.sleep(random.uniform(0.05, 0.3))
    image = str(ctx.data.get("image") or "unknown")[:200]
    image_meta.get_or_fetch(image, lambda key: {"image": key, "bytes": random.randint(10_000, 900_000)})
    if random.random() < 0.03:
        raise OSError(f"cannot identify image file {ctx.data.get('image')!r}")
    return {"width": 160, "height": 120}


@checkout.handler
def place_order(ctx: Any) -> dict[str, Any]:
    """Everything added, published or fired here carries the checkout's correlation id."""
    order, customer = ctx.data.get("order", 0), ctx.data.get("customer", "cus-ada")
    amount = random.choice([20, 35, 49, 99])
    time.sleep(random.uniform(0.05, 0.3))
    ctx.log("info", f"order {order} placed by {customer}")
    payments.add({"amount": amount, "order": order, "card": f"4242 4242 4242 {random.randint(1000, 9999)}"})
    emails.add({"to": f"{customer.removeprefix('cus-')}@example.com", "template": "order-confirmation"})
    order_events.publish({"order": order, "event": "created", "amount": amount}, key=customer)
    shop_events.fire("order.created", {"order": order, "amount": amount})
    return {"order": order, "amount": amount}
@quotes.handler
def quote(ctx: Any) -> dict[str, Any]:
    qty = max(1, min(int(ctx.data.get("qty") or 1), 1000))
    # The price list of the demo changes every three minutes: a replay across it shows the diff.
    bulk_discount = int(time.time() // 180) % 2 == 1 and qty >= 5
    unit = 230 if bulk_discount else 250
    return {"qty": qty, "net": qty * unit, "tax": round(qty * unit * 0.2), "discount": bulk_discount}


@ticker.handler
def tick(ctx: Any) -> dict[str, Any]:
    from .workload import tick as add_work

    return add_work(ctx.data)


@oqronkit.cron("stock-digest", "* * * * *")
def stock_digest(ctx: Any) -> dict[str, Any]:
    time.sleep(random.uniform(0.1, 0.5))
    return {"skus": random.randint(100, 500)}


@oqronkit.schedule("price-sync", every=timedelta(seconds=45))
def price_sync(ctx: Any) -> dict[str, Any]:
    if random.random() < 0.2:
        raise TimeoutError("the price feed did not answer within 5 s")
    return {"prices": random.randint(10, 50)}
