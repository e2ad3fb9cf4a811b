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
#: Rate limits held on handler starts (issue 34): each process alone could start far
#: more (4 or 3 slots of a 20 ms call), so the cluster-wide rate is what binds.
rate20 = oqronkit.queue("rate20", concurrency=4, rate_limit=(20, 1), lease=5)
rate4 = oqronkit.queue("rate4", concurrency=3, rate_limit=(4, 0.25), lease=5)
#: A start the test holds at the gate, then kills the worker holding it.
gated = oqronkit.queue("gated", rate_limit=(1, 1), lease=1.5)


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


def api_call(ctx):
    """What a rate-limited API behind the handler sees: a call at the handler's start."""
    enter = time.time()
    time.sleep(0.02)
    return {"pid": os.getpid(), "enter": enter}


rate20.handler(api_call)
rate4.handler(api_call)
gated.handler(api_call)
