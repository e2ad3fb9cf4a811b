"""Queues for the browser tests and the screenshots, discovered by ``runworker``.

* ``reports`` (slow): a long job reporting progress every half second, so a run detail
  page always has a live progress bar to watch;
* ``payments`` (flaky): fails on a job's first execution (no retries, so it is dead-
  lettered at once) and succeeds when retried from the dead-letter queue, so a retry
  removes it from the DLQ for good;
* ``emails`` (steady): quick jobs that complete, so the lists are not only failures.

And a topic, ``events`` (2 partitions), with two groups: ``audit`` handles every
message; ``mailer`` (no retries) dead-letters every message whose payload asks it to
fail, so the topic pages have deliveries, lag and dead letters to show.

And ``checkout``: its handler adds an ``emails`` job and publishes to ``events``, both
inheriting the checkout's correlation id (the trace page's test).
And ``quotes`` (replayable): prices from the input and a price list kept in a file, so
the replay test changes the output between runs by changing the file.

And a webhook, ``hooks`` (one attempt per delivery, so a refused one dies at once): its
endpoints are added at run time by ``tests/browser/prepare.py`` and point at a receiver
on 127.0.0.1 that the browser test runs.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import oqronkit

SLOW_STEPS = int(os.environ.get("BROWSER_SLOW_STEPS", "240"))
SLOW_STEP_S = 0.5

slow = oqronkit.queue("reports", concurrency=2, retries=0, lease=10)
flaky = oqronkit.queue("payments", concurrency=4, retries=0)
steady = oqronkit.queue("emails", concurrency=4, retries=1)
events = oqronkit.topic("events", partitions=2)
quotes = oqronkit.queue("quotes", concurrency=2, retries=0, replayable=True)
# A test secret (the browser tests never verify it); loopback endpoints are allowed.
checkout = oqronkit.queue("checkout", concurrency=2, retries=0)
hooks = oqronkit.webhook("hooks", secret="whsec_YnJvd3Nlci10ZXN0LXNlY3JldC0wMTIzNDU2Nzg5", schedule=[0],
                         allow_private=True, timeout=5)


@slow.handler
def crunch(ctx: Any) -> dict[str, Any]:
    """Advance a progress bar step by step; stop early when cancelled or shut down."""
    steps = int((ctx.data or {}).get("steps", SLOW_STEPS))
    for step in range(1, steps + 1):
        if ctx.cancelled:
            return {"stopped_at": step}
        time.sleep(SLOW_STEP_S)
        ctx.progress(100 * step / steps, f"step {step} of {steps}")
        if step % 10 == 0:
            ctx.log("info", f"crunched {step} of {steps} chunks")
    return {"steps": steps}


def _seen_dir() -> Path:
    """Where the flaky handler remembers the jobs it already failed once."""
    path = Path(os.environ.get("BROWSER_FLAKY_DIR", "/tmp/oqron-browser-flaky"))
    path.mkdir(parents=True, exist_ok=True)
    return path


@flaky.handler
def charge(ctx: Any) -> dict[str, Any]:
    """Fail the first time a job runs, succeed on any later run (a retry)."""
    marker = _seen_dir() / ctx.job_id
    if not marker.exists():
        marker.touch()
        order = (ctx.data or {}).get("order", 0)
        ctx.log("warning", f"charging order {order}")
        if order % 4 == 3:
            raise ValueError(f"card of customer '{(ctx.data or {}).get('customer')}' expired in 2024")
        raise ConnectionError(f"payment gateway refused order {order}: 503 Service Unavailable")
    return {"charged": True}


@quotes.handler
def quote(ctx: Any) -> dict[str, Any]:
    """The unit price from the price list file (250 until a test writes another)."""
    price_file = _seen_dir() / "unit-price"
    unit = int(price_file.read_text()) if price_file.exists() else 250
    return {"net": int(ctx.data["qty"]) * unit}


@steady.handler
def deliver(ctx: Any) -> dict[str, Any]:
    ctx.progress(50)
    ctx.log("info", f"delivered {ctx.data}")
    return {"delivered": True}


@events.subscribe("audit", start_from="earliest", concurrency=2)
def audit(ctx: Any) -> dict[str, Any]:
    return {"seen": ctx.message.offset}


@events.subscribe("mailer", start_from="earliest", concurrency=2, retries=0)
def mail(ctx: Any) -> dict[str, Any]:
    if isinstance(ctx.data, dict) and ctx.data.get("fail"):
        raise ValueError(f"cannot mail {ctx.data.get('note')!r}")
    return {"mailed": True}


@checkout.handler
def place_order(ctx: Any) -> dict[str, Any]:
    """What it adds and publishes carries this job's correlation id, with this run as the cause."""
    steady.add({"to": "buyer@example.com", "template": "order-confirmation"})
    events.publish({"order": (ctx.data or {}).get("order"), "note": "order placed"})
    return {"placed": (ctx.data or {}).get("order")}
