"""Queues for the real-process tests (imported by ``python -m oqronkit worker``)."""

from __future__ import annotations

import os
import time

import oqronkit

slow = oqronkit.queue("slow", concurrency=2, lease=1.5, backoff=0.1, retries=3)


@slow.handler
def slow_job(ctx):
    """Sleeps ``data["seconds"]``; reports who ran it."""
    deadline = time.monotonic() + ctx.data.get("seconds", 0)
    while time.monotonic() < deadline:
        if ctx.cancelled:
            return {"pid": os.getpid(), "cancelled": True}
        time.sleep(0.02)
    return {"pid": os.getpid()}


quick = oqronkit.queue("quick", concurrency=10)


@quick.handler
def quick_job(ctx):
    return {"pid": os.getpid()}
