"""An every-second cron for the failover test (imported by ``python -m oqronkit worker``).

Each execution works for a moment (so a kill can land mid-run) and then leaves its own
durable mark, so the test counts completed executions per slot independently of the run
records the scheduler writes.
"""

from __future__ import annotations

import os
import secrets
import time

import oqronkit
from oqronkit.engine import get_engine

FIRES = "cron_fires"


@oqronkit.cron("tick", "* * * * * *", missed="run-all", max_missed_runs=100)
def tick(ctx):
    time.sleep(0.15)
    mark = f"{ctx.slot_ms}-{secrets.token_hex(4)}"
    get_engine().durable.put(FIRES, mark, {"slot": ctx.slot_ms, "pid": os.getpid(), "runId": ctx.run_id,
                                           "trigger": ctx.trigger})
    return {"pid": os.getpid()}
