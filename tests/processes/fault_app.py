"""Queues for the fault tests (imported by ``python -m oqronkit worker``)."""

from __future__ import annotations

import os
import time

import oqronkit

#: One long job at a time per worker: SIGKILL lands while it runs.
long = oqronkit.queue("long", concurrency=2, lease=1.5, backoff=0.1, retries=3)


@long.handler
def long_job(ctx):
    """Sleeps ``data["seconds"]``; reports which process ran it."""
    deadline = time.monotonic() + ctx.data.get("seconds", 0)
    while time.monotonic() < deadline and not ctx.cancelled:
        time.sleep(0.02)
    return {"pid": os.getpid()}


#: Many short jobs: the run a fault interrupts.
bulk = oqronkit.queue("bulk", concurrency=8, lease=3.0, backoff=0.1, retries=3)


@bulk.handler
def bulk_job(ctx):
    """Sleeps ``data["ms"]`` milliseconds; reports which process ran it."""
    time.sleep(ctx.data.get("ms", 0) / 1000)
    return {"pid": os.getpid()}


#: Pub/sub under faults: two groups of one topic, and a slow group for SIGKILL.
events = oqronkit.topic("events", partitions=2)


@events.subscribe("alpha", start_from="earliest", concurrency=4, lease=3.0, backoff=0.1)
def alpha(ctx):
    time.sleep(ctx.data.get("ms", 0) / 1000)
    return {"pid": os.getpid()}


@events.subscribe("beta", start_from="earliest", concurrency=4, lease=3.0, backoff=0.1)
def beta(ctx):
    time.sleep(ctx.data.get("ms", 0) / 1000)
    return {"pid": os.getpid()}


slow_events = oqronkit.topic("slow_events")


@slow_events.subscribe("one", start_from="earliest", concurrency=2, lease=1.5, backoff=0.1)
def slow_one(ctx):
    deadline = time.monotonic() + ctx.data.get("seconds", 0)
    while time.monotonic() < deadline and not ctx.cancelled:
        time.sleep(0.02)
    return {"pid": os.getpid()}


ordered = oqronkit.topic("ordered", partitions=2, ordering="key")


@ordered.subscribe("seq", start_from="earliest", concurrency=4, backoff=0.05)
def in_order(ctx):
    time.sleep(ctx.data.get("ms", 0) / 1000)
    return {"pid": os.getpid()}
