"""``as_job=True``: a durable job per slot in the definition's queue, run by any worker,
with the slot's claim (a run record) settled from the job's outcome."""

from __future__ import annotations

import oqronkit
from tests.engine.queue.conftest import running, wait_until

from .conftest import START, leader, ms, step

T0 = ms(START)


def test_each_slot_becomes_one_job_and_its_claim_is_settled(any_engine, clock):
    seen = []

    def report(ctx):
        seen.append((ctx.slot_ms, ctx.payload, ctx.trigger, ctx.job_id))
        ctx.log("info", "as a job")
        return {"slot": ctx.slot_ms}

    oqronkit.cron("jobby", "* * * * *", as_job=True, payload={"p": 1}, handler=report, engine=any_engine)
    scheduler = leader(any_engine, clock)
    try:
        step(scheduler)
        step(scheduler)  # nothing new: the slot was claimed once
        claim_id = f"cron:jobby:{T0}"
        claim = any_engine.durable.get("runs", claim_id).value
        assert claim["status"] == "queued" and claim["jobId"] == claim_id and claim["queue"] == "cron.jobby"
        job = any_engine.durable.get("queue_job:cron.jobby", claim_id).value
        assert job["data"]["slot"] == T0 and job["data"]["payload"] == {"p": 1}
        with running(any_engine, services=False):
            wait_until(lambda: any_engine.durable.get("runs", claim_id).value["status"] == "completed", timeout=20)
        assert seen == [(T0, {"p": 1}, "cron", claim_id)]
        claim = any_engine.durable.get("runs", claim_id).value
        assert claim["output"] == {"slot": T0} and claim["module"] == "cron"
        attempts = [r.value for r in any_engine.durable.list("runs", name="cron.jobby", limit=10).records]
        assert len(attempts) == 1 and attempts[0]["jobId"] == claim_id and attempts[0]["logs"][0]["msg"] == "as a job"
    finally:
        scheduler.shutdown(wait=2)


def test_a_failing_slot_job_is_retried_by_its_queue_then_dead_lettered(mem_engine, clock):
    def boom(ctx):
        raise RuntimeError("nope")

    oqronkit.cron("dead", "* * * * *", as_job=True, retries=1, backoff=0.01, handler=boom, engine=mem_engine)
    scheduler = leader(mem_engine, clock)
    try:
        step(scheduler)
        claim_id = f"cron:dead:{T0}"
        with running(mem_engine, services=False):
            wait_until(lambda: mem_engine.durable.get("runs", claim_id).value["status"] == "failed", timeout=20)
        assert mem_engine.durable.get("queue_dlq:cron.dead", claim_id) is not None
        assert mem_engine.durable.get("runs", claim_id).value["attempts"] == 2
    finally:
        scheduler.shutdown(wait=2)


def test_overlap_skip_waits_for_the_previous_job(mem_engine, clock):
    oqronkit.cron("busy", "* * * * *", as_job=True, handler=lambda ctx: None, engine=mem_engine)
    scheduler = leader(mem_engine, clock)
    try:
        step(scheduler)
        step(scheduler, clock, 60)  # the first job is still waiting in its queue: skipped
        assert mem_engine.durable.count("queue_job:cron.busy") == 1
        assert mem_engine.durable.get("cron_durable", "busy").value["counters"]["skipped"] == 1
    finally:
        scheduler.shutdown(wait=2)


def test_a_claim_whose_job_was_never_added_is_recovered(mem_engine, clock):
    oqronkit.cron("lost", "0 * * * *", as_job=True, handler=lambda ctx: None, engine=mem_engine)
    scheduler = leader(mem_engine, clock)
    try:
        step(scheduler)
        claim_id = f"cron:lost:{T0}"
        mem_engine.durable.delete("queue_job:cron.lost", claim_id)  # as if the leader died before adding it
        step(scheduler, clock, 60)  # past the grace period; the recovery pass runs on its interval
        assert mem_engine.durable.get("queue_job:cron.lost", claim_id) is not None
    finally:
        scheduler.shutdown(wait=2)


def test_overlap_cancel_previous_cancels_the_previous_job(mem_engine, clock):
    oqronkit.cron("newest", "* * * * *", as_job=True, overlap="cancel-previous", handler=lambda ctx: None,
                  engine=mem_engine)
    scheduler = leader(mem_engine, clock)
    try:
        step(scheduler)
        step(scheduler, clock, 60)
        first, second = f"cron:newest:{T0}", f"cron:newest:{T0 + 60_000}"
        assert mem_engine.durable.get("queue_job:cron.newest", first) is None
        assert mem_engine.durable.get("queue_dlq:cron.newest", first).value["deadReason"].startswith("cancelled")
        assert mem_engine.durable.get("queue_job:cron.newest", second) is not None
    finally:
        scheduler.shutdown(wait=2)
