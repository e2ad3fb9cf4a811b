"""The queue of the Redis Cluster failover test (imported by ``python -m oqronkit worker``).

Each run appends "<job id> <pid> <start ns> <end ns>" to a file of its own process in
``$OQRON_TEST_RUN_DIR``: a record of every execution kept outside both planes, so two
executions of one attempt (same lease token, same run record) still show up.
"""

from __future__ import annotations

import os
import threading
import time

import oqronkit

bulk = oqronkit.queue("bulk", concurrency=8, lease=3.0, backoff=0.1, retries=3)
_lock = threading.Lock()


@bulk.handler
def bulk_job(ctx):
    """Sleeps ``data["ms"]`` milliseconds and records when it ran."""
    start = time.time_ns()
    time.sleep(ctx.data.get("ms", 0) / 1000)
    end = time.time_ns()
    path = os.path.join(os.environ["OQRON_TEST_RUN_DIR"], f"runs-{os.getpid()}.txt")
    with _lock, open(path, "a") as out:
        out.write(f"{ctx.job_id} {os.getpid()} {start} {end}\n")
    return {"pid": os.getpid()}
