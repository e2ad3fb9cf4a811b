"""A batch queue for the SIGKILL test (imported by ``python -m oqronkit worker``)."""

from __future__ import annotations

import os
import time

import oqronkit

#: Batches of 5 that run for ``data["seconds"]``: SIGKILL lands mid-batch.
kbatch = oqronkit.queue("kbatch", concurrency=1, lease=1.0, backoff=0.05, retries=3,
                        batch=oqronkit.Batch(size=5, max_wait=0.1))


@kbatch.handler
def slow_batch(jobs):
    deadline = time.monotonic() + max(ctx.data.get("seconds", 0) for ctx in jobs)
    while time.monotonic() < deadline and not jobs[0].cancelled:
        time.sleep(0.02)
    return [{"pid": os.getpid()} for _ in jobs]
