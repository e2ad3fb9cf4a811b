"""Queues for the group fault test (imported by ``python -m oqronkit worker``)."""

from __future__ import annotations

import os
import time

import oqronkit

#: The members: short jobs, a short lease so a killed worker's jobs come back quickly.
members = oqronkit.queue("members", concurrency=4, lease=1.5, backoff=0.1, retries=5)


@members.handler
def member(ctx):
    time.sleep(ctx.data.get("ms", 0) / 1000)
    return {"i": ctx.data["i"], "pid": os.getpid()}


#: The callback: reads every member's output and says what it saw.
finished = oqronkit.queue("finished", concurrency=1)


@finished.handler
def on_finished(ctx):
    results = oqronkit.group_results(ctx.group_id)
    return {"completed": sum(1 for r in results if r.status == "completed"),
            "indexes": sorted(r.output["i"] for r in results if r.output is not None)}
