"""The scheduler inside a real worker process's leader services (real clock, threads)."""

from __future__ import annotations

import time

import oqronkit
from tests.engine.queue.conftest import running, wait_until


def test_the_leader_fires_an_every_second_cron(any_engine):
    oqronkit.cron("svc", "* * * * * *", missed="run-all", handler=lambda ctx: ctx.slot_ms, engine=any_engine)
    with running(any_engine) as process:
        wait_until(lambda: process.services is not None and process.services.is_leader, timeout=10)
        time.sleep(3.2)
    runs = [r.value for r in any_engine.durable.list("runs", name="svc", module="cron", limit=100).records]
    slots = sorted(r["slotAt"] for r in runs)
    assert len(slots) >= 3 and len(set(slots)) == len(slots)
    assert slots == list(range(slots[0], slots[-1] + 1000, 1000))  # consecutive seconds, no gaps
    assert all(r["status"] == "completed" and r["output"] == r["slotAt"] for r in runs)
    assert max(r["lateMs"] for r in runs) < 1500
    stored = any_engine.durable.get("cron", "svc").value
    assert stored["kind"] == "cron" and stored["expression"] == "* * * * * *"
