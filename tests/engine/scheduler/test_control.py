"""Operating definitions through the public API: pause/resume, run-now, preview,
versions, dynamic schedules, one-offs, and a dead leader's claims."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

import oqronkit
from oqronkit import Engine, Registry
from oqronkit.live import LEADER_RUN_TTL_MS, RUNS_GROUP
from oqronkit.queues.runs import new_run
from oqronkit.scheduler import load, set_paused

from .conftest import START, leader, ms, runs_of, step

T0 = ms(START)


def node(engine: Engine) -> Engine:
    """Another process's view of the same planes, with its own declarations."""
    return Engine(engine.config, registry=Registry(), durable=engine.durable, hot=engine.hot)


def test_pause_is_cluster_wide_and_resume_drops_the_paused_slots(mem_engine, clock, sched):
    calls = []
    beat = oqronkit.cron("beat", "* * * * *", handler=lambda ctx: calls.append(ctx.slot_ms), engine=mem_engine)
    step(sched)
    set_paused(node(mem_engine), "cron", "beat", True, now=clock())  # paused from another node (the board)
    assert beat.state()["paused"] is True
    for _ in range(5):
        step(sched, clock, 60)
    assert calls == [T0]
    clock.advance(30)
    beat.resume()
    state = beat.state()
    assert state["paused"] is False and state["resumedAt"] is not None
    assert state["nextRunAt"] == T0 + 360_000  # the next slot after the resume, not the paused ones
    step(sched, clock, 30)
    assert calls == [T0, T0 + 360_000]
    assert beat.state()["counters"]["missed"] == 0


def test_pause_survives_a_new_leader(mem_engine, clock, sched):
    calls = []
    beat = oqronkit.cron("p2", "* * * * *", handler=lambda ctx: calls.append(1), engine=mem_engine)
    step(sched)
    beat.pause()
    sched.set_leader(False)
    other = leader(mem_engine, clock, worker_id="leader-2")
    try:
        for _ in range(3):
            step(other, clock, 60)
    finally:
        other.shutdown(wait=1)
    assert calls == [1]


def test_run_now_runs_once_even_while_paused(mem_engine, clock, sched):
    seen = []
    beat = oqronkit.cron("manual", "0 3 * * *", payload={"a": 1},
                         handler=lambda ctx: seen.append((ctx.trigger, ctx.payload, ctx.slot)), engine=mem_engine)
    beat.pause()
    run_id = beat.run_now()
    step(sched)
    second = beat.run_now({"b": 2})
    step(sched)
    assert seen == [("manual", {"a": 1}, None), ("manual", {"b": 2}, None)]
    assert mem_engine.durable.get("runs", run_id).value["status"] == "completed"
    assert mem_engine.durable.get("runs", second).value["trigger"] == "manual"
    state = beat.state()
    assert state["manual"] == [] and state["counters"]["manual"] == 2 and state["counters"]["run"] == 0


def test_preview_in_the_definition_time_zone():
    beat = oqronkit.cron("tz", "30 2 * * *", timezone="America/New_York", engine=Engine(
        oqronkit.OqronConfig(mode="memory", database_url=None), registry=Registry()))
    times = beat.preview(3, after=datetime(2026, 3, 7, 12, tzinfo=UTC))
    assert [t.isoformat() for t in times] == [
        "2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00", "2026-03-10T02:30:00-04:00"]
    assert times[0].tzinfo == ZoneInfo("America/New_York")
    assert beat.describe() == "At 02:30 every day (America/New_York)"


def test_version_upgrade_updates_the_definition_and_keeps_state(mem_engine, clock, sched):
    v1 = oqronkit.cron("ver", "0 * * * *", handler=lambda ctx: None, engine=mem_engine)
    step(sched)
    v1.pause()
    step(sched, clock, 3600)
    newer = node(mem_engine)
    oqronkit.cron("ver", "*/30 * * * *", version=2, handler=lambda ctx: None, engine=newer)
    new_leader = leader(newer, clock, worker_id="new")
    try:
        step(new_leader)
        stored, state = load(mem_engine, "cron", "ver")
        assert stored.version == 2 and stored.expression == "*/30 * * * *"
        assert state["version"] == 2 and state["paused"] is True and state["counters"]["run"] == 1
    finally:
        new_leader.shutdown(wait=1)


def test_version_downgrade_keeps_the_stored_definition_and_warns(mem_engine, clock, caplog):
    newer = node(mem_engine)
    oqronkit.cron("down", "*/30 * * * *", version=3, handler=lambda ctx: None, engine=newer)
    oqronkit.cron("down", "0 * * * *", version=2, handler=lambda ctx: None, engine=mem_engine)
    first = leader(newer, clock, worker_id="new")
    step(first)
    first.shutdown(wait=1)
    old = leader(mem_engine, clock, worker_id="old")
    try:
        with caplog.at_level(logging.WARNING, logger="oqronkit.scheduler.control"):
            step(old)
        stored, state = load(mem_engine, "cron", "down")
        assert stored.version == 3 and stored.expression == "*/30 * * * *" and state["version"] == 3
        assert "keeping the stored one" in caplog.text
        assert old.entries[("cron", "down")].definition.expression == "*/30 * * * *"  # fires the stored timing
    finally:
        old.shutdown(wait=1)


def test_a_one_off_schedule_fires_once(mem_engine, clock, sched):
    calls = []
    oqronkit.schedule("once", run_at=T0 + 90_000, handler=lambda ctx: calls.append(ctx.slot_ms), engine=mem_engine)
    step(sched)
    step(sched, clock, 90)
    step(sched, clock, 3600)
    assert calls == [T0 + 90_000]
    state = mem_engine.durable.get("schedule_durable", "once").value
    assert state["done"] is True and state["nextRunAt"] is None
    assert runs_of(mem_engine, "once", "schedule")[0]["module"] == "schedule"


def test_a_one_off_missed_during_downtime_still_runs_once_by_default(mem_engine, clock, sched):
    calls = []
    oqronkit.schedule("late", run_at=T0 - 3600_000, handler=lambda ctx: calls.append(ctx.trigger),
                      engine=mem_engine)
    step(sched)
    assert calls == ["catch-up"]


def test_dynamic_schedules_are_durable_and_fire_on_whichever_node_leads(mem_engine, clock, sched):
    got = []
    oqronkit.schedule("remind", handler=lambda ctx: got.append((ctx.name, ctx.payload)), engine=mem_engine)
    step(sched)
    # Another node (a web process) triggers it; it declares the template without running a leader.
    web = node(mem_engine)
    template = oqronkit.schedule("remind", engine=web)
    handle = template.trigger({"user": 7}, run_at=T0 + 60_000, key="u7")
    assert handle.name == "remind:u7" and template.trigger({"user": 7}, key="u7").name == "remind:u7"
    stored = mem_engine.durable.get("schedule", "remind:u7").value
    assert stored["payload"] == {"user": 7} and stored["base"] == "remind" and stored["dynamic"] is True
    assert stored["handler"].endswith("<lambda>")  # taken from the stored template
    # The leader restarts before it is due: the new leader still fires it.
    sched.set_leader(False)
    sched.set_leader(True)
    step(sched, clock, 60)
    assert got == [("remind:u7", {"user": 7})]
    state = mem_engine.durable.get("schedule_durable", "remind:u7").value
    assert state["done"] is True and state["expiresAt"] > clock()


def test_dynamic_recurring_schedule_and_cancel(mem_engine, clock, sched):
    got = []
    template = oqronkit.schedule("poll", handler=lambda ctx: got.append(ctx.slot_ms), engine=mem_engine)
    handle = template.trigger(None, every=60, key="x")
    for _ in range(3):
        step(sched, clock, 60)
    handle.cancel()
    for _ in range(3):
        step(sched, clock, 60)
    assert got == [T0 + 60_000, T0 + 120_000, T0 + 180_000]


def _orphan(engine: Engine, name: str, slot: int, started: int) -> dict:
    """A run claimed by a leader that died while running it."""
    run = new_run(name=name, module="cron", trigger="cron", input=None, attempts=1, app="p", environment="test",
                  worker_id="host-999-dead", started_at=started)
    run.update(id=f"cron:{name}:{slot}", claimId=f"cron:{name}:{slot}", slotAt=slot)
    engine.durable.put("runs", run["id"], run)
    return run


@pytest.mark.parametrize(("missed", "rerun"), [("skip", False), ("run-once", True), ("run-all", True)])
def test_a_dead_leaders_running_claim_is_resolved_by_policy(mem_engine, clock, sched, missed, rerun):
    calls = []
    oqronkit.cron("orph", "0 * * * *", missed=missed, handler=lambda ctx: calls.append((ctx.trigger, ctx.attempt)),
                  engine=mem_engine)
    orphan = _orphan(mem_engine, "orph", T0 - 3600_000, T0 - 3600_000)
    step(sched)  # the new leader's first tick resolves it (and fires the on-time slot T0)
    step(sched)
    lost = mem_engine.durable.get("runs", orphan["id"]).value
    assert lost["status"] == "failed" and lost["error"]["type"] == "LeaderLost"
    assert (("recovery", 2) in calls) is rerun
    if rerun:
        again = mem_engine.durable.get("runs", orphan["id"] + "#2").value
        assert again["status"] == "completed" and again["slotAt"] == T0 - 3600_000


def test_a_running_claim_that_is_still_live_is_left_alone(mem_engine, clock, sched):
    oqronkit.cron("alive", "0 * * * *", missed="run-all", handler=lambda ctx: None, engine=mem_engine)
    orphan = _orphan(mem_engine, "alive", T0 - 3600_000, T0 - 60_000)
    mem_engine.hot.kv_set(RUNS_GROUP, {orphan["id"]: "{}"}, ttl_ms=LEADER_RUN_TTL_MS, now=clock())
    step(sched)
    assert mem_engine.durable.get("runs", orphan["id"]).value["status"] == "running"


def test_the_catch_up_backlog_is_durable_across_leaders(mem_engine, clock, sched):
    gate_open = []

    def slow(ctx):
        gate_open.append(ctx.slot_ms)

    oqronkit.cron("bk", "* * * * *", missed="run-all", handler=slow, engine=mem_engine)
    step(sched)
    clock.advance(300)
    sched.tick()  # plans five late slots: one starts, four wait in the backlog
    sched.executor.wait_idle()
    backlog = mem_engine.durable.get("cron_durable", "bk").value["backlog"]
    assert len(backlog) == 4
    sched.set_leader(False)  # the leader goes away before draining it
    successor = leader(mem_engine, clock, worker_id="successor")
    try:
        for _ in range(6):
            step(successor)
    finally:
        successor.shutdown(wait=1)
    assert gate_open == [T0 + i * 60_000 for i in range(6)]


def test_an_rrule_with_count_ends_and_is_done(mem_engine, clock, sched):
    calls = []
    oqronkit.schedule("twice", rrule="FREQ=DAILY;COUNT=2", run_at=T0 + 1000, handler=lambda ctx: calls.append(1),
                      engine=mem_engine)
    step(sched)  # stored now: its first occurrence is one second later
    for _ in range(4):
        step(sched, clock, 86_400)
    assert len(calls) == 2
    assert mem_engine.durable.get("schedule_durable", "twice").value["done"] is True


def test_a_flood_of_changes_falls_back_to_a_sweep(mem_engine, clock, sched):
    calls = []
    beat = oqronkit.cron("flood", "* * * * *", handler=lambda ctx: calls.append(1), engine=mem_engine)
    step(sched)
    for _ in range(1100):  # e.g. a deploy storing many definitions at once
        mem_engine.hot.incr("scheduler:changes")
    set_paused(mem_engine, "cron", "flood", True, now=clock())
    for _ in range(3):
        step(sched, clock, 60)
    assert calls == [1] and beat.state()["paused"] is True


def test_redeclaring_a_job_mode_cron_replaces_its_queue():
    engine = Engine(oqronkit.OqronConfig(mode="memory", database_url=None), registry=Registry())

    def handler(ctx):
        return None

    oqronkit.cron("again", "@hourly", as_job=True, handler=handler, engine=engine)
    oqronkit.cron("again", "@hourly", as_job=True, handler=handler, engine=engine)  # the module imported twice
    assert engine.registry.queues["cron.again"].fn is not None
