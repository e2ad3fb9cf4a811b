"""A cron's condition and before_run: a tick its condition refuses is recorded as a
cancelled run with the reason (never retried); before_run raising fails the run."""

from __future__ import annotations

import oqronkit
from tests.engine.queue.conftest import running, wait_until

from .conftest import START, leader, ms, runs_of, step

T0 = ms(START)


def test_a_refused_tick_is_a_cancelled_run_with_the_reason(mem_engine, clock, sched):
    calls = []
    open_hours = [False, True]
    oqronkit.cron("gated", "* * * * *", retries=2, handler=lambda ctx: calls.append(ctx.slot_ms) or "ran",
                  condition=lambda ctx: open_hours.pop(0) or "outside opening hours", engine=mem_engine)
    step(sched)
    step(sched, clock, 60)
    first, second = runs_of(mem_engine, "gated")
    assert first["status"] == "cancelled" and first["timeline"][-1]["reason"] == "skipped: outside opening hours"
    assert second["status"] == "completed" and second["output"] == "ran" and len(calls) == 1


def test_before_run_raising_fails_the_tick(mem_engine, clock, sched):
    def before_run(ctx):
        raise RuntimeError("dependency down")

    oqronkit.cron("guarded", "* * * * *", before_run=before_run, engine=mem_engine)(lambda ctx: "never")
    step(sched)
    [run] = runs_of(mem_engine, "guarded")
    assert run["status"] == "failed" and run["error"]["message"] == "dependency down"


def test_a_refused_slot_job_settles_its_claim_as_cancelled(mem_engine, clock):
    oqronkit.cron("jobgate", "* * * * *", as_job=True, retries=3, handler=lambda ctx: "never",
                  condition=lambda ctx: "maintenance window", engine=mem_engine)
    scheduler = leader(mem_engine, clock)
    try:
        step(scheduler)
        claim_id = f"cron:jobgate:{T0}"
        with running(mem_engine, services=False):
            wait_until(lambda: mem_engine.durable.get("runs", claim_id).value["status"] == "cancelled", timeout=10)
        claim = mem_engine.durable.get("runs", claim_id).value
        assert claim["timeline"][-1]["reason"] == "skipped: maintenance window"
        assert mem_engine.durable.get("queue_job:cron.jobgate", claim_id) is None
        assert mem_engine.durable.get("queue_dlq:cron.jobgate", claim_id) is None
    finally:
        scheduler.shutdown(wait=2)
