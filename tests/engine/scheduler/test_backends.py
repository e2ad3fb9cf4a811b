"""The same guarantees over every durable backend (memory, SQLite, Postgres)."""

from __future__ import annotations

import oqronkit

from .conftest import START, leader, ms, runs_of, step
from .test_control import _orphan, node

T0 = ms(START)


def test_split_brain_fires_each_slot_once_with_stored_claims(any_engine, clock):
    calls = []
    oqronkit.cron("sb", "* * * * * *", missed="run-all", handler=lambda ctx: calls.append(ctx.slot_ms),
                  engine=any_engine)
    other = node(any_engine)
    oqronkit.cron("sb", "* * * * * *", missed="run-all", handler=lambda ctx: calls.append(ctx.slot_ms), engine=other)
    a, b = leader(any_engine, clock, worker_id="a"), leader(other, clock, worker_id="b")
    try:
        step(a)
        for i in range(12):
            clock.advance(1 if i != 5 else 4)  # one stall: slots come due together
            step(b)
            step(a)
        for _ in range(6):  # catch-up runs one at a time (overlap="skip"): drain the backlog
            step(a)
            step(b)
    finally:
        a.shutdown(wait=2)
        b.shutdown(wait=2)
    assert sorted(calls) == [T0 + i * 1000 for i in range(16)]
    runs = runs_of(any_engine, "sb")
    assert [r["id"] for r in runs] == [f"cron:sb:{T0 + i * 1000}" for i in range(16)]
    assert {r["status"] for r in runs} == {"completed"} and {r["workerId"] for r in runs} <= {"a", "b"}
    state = any_engine.durable.get("cron_durable", "sb").value
    assert state["nextRunAt"] == T0 + 16_000 and state["counters"]["run"] == 16


def test_pause_and_run_now_are_persisted(any_engine, clock):
    calls = []
    beat = oqronkit.cron("pr", "* * * * *", handler=lambda ctx: calls.append(ctx.trigger), engine=any_engine)
    scheduler = leader(any_engine, clock)
    try:
        step(scheduler)
        beat.pause()
        step(scheduler, clock, 60)
        beat.run_now()
        step(scheduler)
        assert calls == ["cron", "manual"]
        assert any_engine.durable.get("cron_durable", "pr").value["paused"] is True
    finally:
        scheduler.shutdown(wait=2)


def test_dead_leader_claim_is_rerun_once(any_engine, clock):
    calls = []
    oqronkit.cron("dl", "0 * * * *", missed="run-all", handler=lambda ctx: calls.append(ctx.trigger),
                  engine=any_engine)
    orphan = _orphan(any_engine, "dl", T0 - 3600_000, T0 - 3600_000)
    scheduler = leader(any_engine, clock)
    try:
        step(scheduler)
        step(scheduler)
    finally:
        scheduler.shutdown(wait=2)
    assert sorted(calls) == ["cron", "recovery"]
    assert any_engine.durable.get("runs", orphan["id"]).value["error"]["type"] == "LeaderLost"
    assert any_engine.durable.get("runs", orphan["id"] + "#2").value["status"] == "completed"


def test_definition_and_control_rows_have_the_spec_kinds(any_engine, clock):
    oqronkit.cron("kinds", "@hourly", handler=lambda ctx: None, engine=any_engine)
    oqronkit.schedule("kinds", every=60, handler=lambda ctx: None, engine=any_engine)
    scheduler = leader(any_engine, clock)
    try:
        step(scheduler)
    finally:
        scheduler.shutdown(wait=2)
    assert any_engine.durable.count(kind="definition") == 2
    assert any_engine.durable.count("cron_durable") == any_engine.durable.count("schedule_durable") == 1
    records = any_engine.durable.list(kind="definition", limit=10).records
    assert {r.namespace for r in records} == {"cron", "schedule"}
