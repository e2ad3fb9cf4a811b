"""Queues with cluster-wide limits for the real-process tests (imported by ``python -m
oqronkit worker``). Each handler returns its wall-clock enter and exit times, so the
test reads from the runs how many ran at once and how many started in any window."""

from __future__ import annotations

import os
import time

import oqronkit

#: Each process may run 2 at once, the cluster only 3: a peak of 3 takes both processes.
capped = oqronkit.queue("capped", concurrency=2, global_concurrency=3, lease=5)
#: At most 3 starts in any half second; one process starts at most 2 per 0.4 s, so
#: the limit binds only on both together.
paced = oqronkit.queue("paced", concurrency=2, rate_limit=(3, 0.5), lease=5)


@capped.handler
def capped_job(ctx):
    enter = time.time()
    time.sleep(0.15)
    return {"pid": os.getpid(), "enter": enter, "exit": time.time()}


@paced.handler
def paced_job(ctx):
    enter = time.time()
    time.sleep(0.4)
    return {"pid": os.getpid(), "enter": enter, "exit": time.time()}
