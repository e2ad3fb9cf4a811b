"""Firing with a controllable clock: one run per slot, claims, pointers, missed-fire
and overlap policies, timeouts, retries (memory engine; see test_backends for SQL)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import oqronkit
from oqronkit.durable import RecordWrite
from oqronkit.queues.runs import new_run
from tests.engine.queue.conftest import wait_until

from .conftest import START, leader, ms, runs_of, step

T0 = ms(START)


def test_each_slot_fires_once_and_the_run_has_no_job(mem_engine, clock, sched):
    seen = []
    oqronkit.cron("beat", "* * * * *", handler=lambda ctx: seen.append((ctx.slot, ctx.trigger)) or {"n": 1},
                  engine=mem_engine)
    assert step(sched) == 1  # the slot at START is due at once
    assert step(sched) == 0  # same instant: nothing new
    clock.advance(59)
    assert step(sched) == 0
    clock.advance(1)
    assert step(sched) == 1
    assert seen == [(START, "cron"), (datetime(2026, 1, 1, 0, 1, tzinfo=UTC), "cron")]
    runs = runs_of(mem_engine, "beat")
    assert [r["id"] for r in runs] == [f"cron:beat:{T0}", f"cron:beat:{T0 + 60_000}"]
    run = runs[0]
    assert run["module"] == "cron" and run["status"] == "completed" and run["output"] == {"n": 1}
    assert "jobId" not in run and run["slotAt"] == T0 and run["workerId"] == "leader-1"
    state = mem_engine.durable.get("cron_durable", "beat").value
    assert state["nextRunAt"] == T0 + 120_000 and state["lastSlotAt"] == T0 + 60_000
    assert state["counters"] == {"missed": 0, "skipped": 0, "run": 2, "manual": 0}
    assert mem_engine.durable.get("cron", "beat").value["expression"] == "* * * * *"


def test_two_leaders_at_once_still_fire_each_slot_once(mem_engine, clock):
    calls = []
    oqronkit.cron("dup", "* * * * * *", handler=lambda ctx: calls.append(ctx.slot_ms), engine=mem_engine)
    a, b = leader(mem_engine, clock, worker_id="a"), leader(mem_engine, clock, worker_id="b")
    try:
        for _ in range(20):
            clock.advance(0.5)
            for scheduler in (a, b):
                step(scheduler)
        assert len(calls) == len(set(calls)) == 10  # slots T0+1s .. T0+10s
    finally:
        a.shutdown(wait=1)
        b.shutdown(wait=1)


def test_a_claimed_slot_is_not_run_again_by_the_next_leader(mem_engine, clock, sched):
    calls = []
    oqronkit.cron("c", "* * * * *", handler=lambda ctx: calls.append(ctx.slot_ms), engine=mem_engine)
    step(sched)
    # A previous leader claimed the next slot, then died before advancing the pointer.
    claim = new_run(name="c", module="cron", trigger="cron", input=None, attempts=1, app="x", environment="test",
                    worker_id="dead", started_at=T0 + 60_000)
    claim.update(id=f"cron:c:{T0 + 60_000}", status="completed")
    mem_engine.durable.put("runs", claim["id"], claim)
    clock.advance(60)
    assert step(sched) == 0
    assert calls == [T0]
    assert mem_engine.durable.get("cron_durable", "c").value["nextRunAt"] == T0 + 120_000


# -- missed fires after downtime --------------------------------------------------------------


def _down(mem_engine, clock, sched, name, seconds, **options):
    calls = []
    oqronkit.cron(name, "* * * * *", handler=lambda ctx: calls.append((ctx.slot_ms, ctx.trigger)),
                  engine=mem_engine, **options)
    step(sched)  # the first slot, on time
    clock.advance(seconds)  # the cluster was down
    for _ in range(200):
        if not step(sched):
            break
    return calls, mem_engine.durable.get("cron_durable", name).value


def test_missed_skip_runs_nothing_late(mem_engine, clock, sched):
    calls, state = _down(mem_engine, clock, sched, "skip", 3630, missed="skip")
    assert calls == [(T0, "cron")]
    assert state["counters"]["missed"] == 60 and state["counters"]["skipped"] == 60
    assert state["nextRunAt"] == T0 + 3660_000


def test_missed_skip_still_runs_the_slot_that_is_on_time(mem_engine, clock, sched):
    calls, state = _down(mem_engine, clock, sched, "skip2", 3600.5, missed="skip")
    assert calls == [(T0, "cron"), (T0 + 3600_000, "cron")]  # 0.5 s late is on time
    assert state["counters"] == {"missed": 59, "skipped": 59, "run": 2, "manual": 0}


def test_missed_run_once_runs_the_latest_slot_once(mem_engine, clock, sched):
    calls, state = _down(mem_engine, clock, sched, "once", 3630, missed="run-once")
    assert calls == [(T0, "cron"), (T0 + 3600_000, "catch-up")]
    assert state["counters"] == {"missed": 60, "skipped": 59, "run": 2, "manual": 0}


def test_missed_run_once_with_an_on_time_slot_runs_only_that_one(mem_engine, clock, sched):
    calls, state = _down(mem_engine, clock, sched, "once2", 3600.5, missed="run-once")
    assert calls == [(T0, "cron"), (T0 + 3600_000, "cron")]
    assert state["counters"] == {"missed": 59, "skipped": 59, "run": 2, "manual": 0}


def test_missed_run_all_runs_every_slot_one_at_a_time_in_order(mem_engine, clock, sched):
    calls, state = _down(mem_engine, clock, sched, "all", 600.5, missed="run-all")
    assert [c[0] for c in calls] == [T0 + i * 60_000 for i in range(11)]
    assert [c[1] for c in calls[1:]] == ["catch-up"] * 9 + ["cron"]
    assert state["counters"] == {"missed": 9, "skipped": 0, "run": 11, "manual": 0}
    assert state["backlog"] == []


def test_run_all_is_bounded_by_max_missed_runs_and_the_catch_up_window(mem_engine, clock, sched):
    calls, state = _down(mem_engine, clock, sched, "cap", 3630, missed="run-all", max_missed_runs=5)
    assert [c[0] for c in calls[1:]] == [T0 + i * 60_000 for i in range(56, 61)]  # the most recent five
    assert state["counters"]["missed"] == 60 and state["counters"]["skipped"] == 55
    calls, state = _down(mem_engine, clock, sched, "win", 3630, missed="run-all", catch_up_window=300)
    # the definition starts at the current (later) clock: its own T0 and downtime
    assert len(calls) == 1 + 5 and state["counters"]["skipped"] == 55


def test_a_week_of_downtime_of_an_every_second_cron_is_counted_not_enumerated(mem_engine, clock, sched):
    calls = []
    oqronkit.cron("sec", every=1, missed="run-all", max_missed_runs=3, handler=lambda ctx: calls.append(ctx.slot_ms),
                  engine=mem_engine)
    step(sched)
    week = 7 * 24 * 3600
    clock.advance(week + 0.5)
    for _ in range(10):
        step(sched)
    state = mem_engine.durable.get("cron_durable", "sec").value
    late = week - 2  # the last two seconds are within the lateness grace
    assert state["counters"]["missed"] == late
    assert state["counters"]["skipped"] == late - 3
    assert calls[1:] == [T0 + (week - i) * 1000 for i in (4, 3, 2, 1, 0)]


# -- overlap ---------------------------------------------------------------------------------


class Gate:
    """A handler that blocks until released, recording each slot it started."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started: list[int] = []
        self.cancelled: list[bool] = []

    def __call__(self, ctx):
        self.started.append(ctx.slot_ms)
        self.release.wait(10)
        self.cancelled.append(ctx.cancelled)


def _overlap(mem_engine, clock, sched, overlap):
    gate = Gate()
    cron = oqronkit.cron(f"o-{overlap}", "* * * * *", overlap=overlap, handler=gate, engine=mem_engine)
    sched.tick()  # slot 0 starts and blocks
    for _ in range(3):
        clock.advance(60)
        sched.tick()
    gate.release.set()
    sched.executor.wait_idle()
    wait_until(lambda: len(gate.cancelled) == len(gate.started))  # cancelled runs settle before returning
    for _ in range(3):
        step(sched)
    return gate, cron.state()


def test_overlap_skip(mem_engine, clock, sched):
    gate, state = _overlap(mem_engine, clock, sched, "skip")
    assert gate.started == [T0] and state["counters"]["skipped"] == 3


def test_overlap_allow(mem_engine, clock, sched):
    gate, _ = _overlap(mem_engine, clock, sched, "allow")
    assert gate.started == [T0 + i * 60_000 for i in range(4)]


def test_overlap_buffer_one(mem_engine, clock, sched):
    gate, state = _overlap(mem_engine, clock, sched, "buffer-one")
    assert gate.started == [T0, T0 + 60_000]  # one buffered; the later two skipped
    assert state["counters"]["skipped"] == 2 and state["backlog"] == []


def test_overlap_cancel_previous(mem_engine, clock, sched):
    gate, _ = _overlap(mem_engine, clock, sched, "cancel-previous")
    assert gate.started == [T0 + i * 60_000 for i in range(4)]
    statuses = [r["status"] for r in runs_of(mem_engine, "o-cancel-previous")]
    assert statuses == ["cancelled", "cancelled", "cancelled", "completed"]
    assert gate.cancelled.count(True) == 3


# -- timeouts, retries, failures --------------------------------------------------------------


def test_timeout_fails_the_run_and_tells_the_handler(mem_engine, clock, sched):
    gate = Gate()
    oqronkit.cron("slow", "0 * * * *", timeout=30, handler=gate, engine=mem_engine)
    sched.tick()
    clock.advance(31)
    sched.executor.maintain(clock())
    run = runs_of(mem_engine, "slow")[0]
    assert run["status"] == "failed" and run["error"]["type"] == "Timeout"
    gate.release.set()
    wait_until(lambda: gate.cancelled)
    assert gate.cancelled == [True]
    assert mem_engine.durable.get("runs", run["id"]).value["status"] == "failed"  # the late return is dropped


def test_retries_are_durable_attempts_with_backoff(mem_engine, clock, sched):
    attempts = []

    def flaky(ctx):
        attempts.append(ctx.attempt)
        if ctx.attempt < 3:
            raise RuntimeError(f"boom {ctx.attempt}")
        return "ok"

    oqronkit.cron("flaky", "0 * * * *", retries=2, backoff=5, handler=flaky, engine=mem_engine)
    step(sched)
    assert mem_engine.durable.get("cron_durable", "flaky").value["retries"][0]["attempt"] == 2
    step(sched, clock, 4)
    assert attempts == [1]
    step(sched, clock, 1)
    step(sched, clock, 5)
    assert attempts == [1, 2, 3]
    runs = runs_of(mem_engine, "flaky")
    assert [(r["id"], r["status"], r["trigger"]) for r in runs] == [
        (f"cron:flaky:{T0}", "failed", "cron"), (f"cron:flaky:{T0}#2", "failed", "retry"),
        (f"cron:flaky:{T0}#3", "completed", "retry")]
    assert runs[0]["error"]["message"] == "boom 1"


def test_a_cron_without_a_handler_records_a_failed_run(mem_engine, clock, sched):
    oqronkit.cron("bare", "* * * * *", engine=mem_engine)
    step(sched)
    run = runs_of(mem_engine, "bare")[0]
    assert run["status"] == "failed" and run["error"]["type"] == "NoHandler"


def test_async_handlers_run_too(mem_engine, clock, sched):
    async def handler(ctx):
        ctx.log("info", "hello")
        ctx.progress(50)
        return ctx.payload

    oqronkit.cron("async", "* * * * *", payload={"x": 1}, handler=handler, engine=mem_engine)
    step(sched)
    run = runs_of(mem_engine, "async")[0]
    assert run["status"] == "completed" and run["output"] == {"x": 1} and run["input"] == {"x": 1}
    assert run["logs"][0]["msg"] == "hello"


def test_jitter_delays_the_fire_but_not_the_slot(mem_engine, clock, sched):
    calls = []
    cron = oqronkit.cron("jit", "0 * * * *", jitter=30, handler=lambda ctx: calls.append(ctx.slot_ms),
                         engine=mem_engine)
    delay = cron.definition.jitter_for(T0)
    assert 0 < delay <= 30_000 and delay == cron.definition.jitter_for(T0)  # deterministic per slot
    step(sched)
    clock.set(T0 + delay - 1)
    step(sched)
    assert calls == []
    step(sched, clock, 0.001)
    assert calls == [T0]
    run = runs_of(mem_engine, "jit")[0]
    assert run["id"] == f"cron:jit:{T0}" and run["lateMs"] == delay


def test_the_claim_is_written_before_the_handler_runs(mem_engine, clock, sched):
    seen = {}

    def handler(ctx):
        seen["stored"] = mem_engine.durable.get("runs", ctx.run_id).value["status"]

    oqronkit.cron("order", "* * * * *", handler=handler, engine=mem_engine)
    step(sched)
    assert seen == {"stored": "running"}


def test_paused_definitions_are_skipped_by_the_heap_not_by_scanning(mem_engine, clock, sched):
    oqronkit.cron("p", "* * * * *", handler=lambda ctx: None, engine=mem_engine)
    mem_engine.durable.put_many([RecordWrite("runs", "x", {"id": "x"})])
    step(sched)
    assert sched.entries[("cron", "p")].token > 0


def test_a_run_too_large_to_store_is_stored_without_its_output(mem_engine, clock, sched):
    """Its final write used to fail five times over and leave the run 'running'."""
    oqronkit.cron("bulky", "* * * * *", payload={"x": 1}, handler=lambda ctx: "x" * 2_000_000, engine=mem_engine)
    step(sched)
    run = runs_of(mem_engine, "bulky")[0]
    assert run["status"] == "completed" and run["output"] is None and run["input"] == {"x": 1}
    assert "left out: output" in run["logs"][-1]["msg"]


def test_what_a_handler_does_to_its_payload_stays_out_of_the_run(mem_engine, clock, sched):
    def meddle(ctx):
        ctx.payload["when"] = datetime.now(UTC)  # not JSON: it used to make the run unstorable

    oqronkit.cron("meddle", "* * * * *", payload={"x": 1}, handler=meddle, engine=mem_engine)
    step(sched)
    run = runs_of(mem_engine, "meddle")[0]
    assert run["status"] == "completed" and run["input"] == {"x": 1}
