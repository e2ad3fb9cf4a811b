"""Replaying past runs on every mode: refusals, ctx.replay, the pairing of runs, the summary."""

from __future__ import annotations

import pytest

from oqronkit import Engine, RecordWrite
from oqronkit.clock import now_ms
from oqronkit.namespaces import RUNS
from oqronkit.replay import ReplayRefused, read_replay_set, replay
from tests.engine.queue.conftest import running, wait_until


def completed_runs(engine: Engine, queue: str) -> list[dict]:
    page = engine.durable.list(RUNS, name=queue, status="completed", limit=500)
    return [r.value for r in page.records]


def settled(engine: Engine, set_id: str):
    def done() -> bool:
        """every replay of the set finished"""
        found = read_replay_set(engine, set_id)
        return found is not None and found.done
    wait_until(done, timeout=20)
    found = read_replay_set(engine, set_id)
    assert found is not None
    return found


def test_a_handler_not_declared_replayable_is_refused_by_name(engine: Engine):
    q = engine.queue("plain", handler=lambda ctx: {"n": ctx.data})
    q.add(1)
    with running(engine):
        wait_until(lambda: completed_runs(engine, "plain"))
    with pytest.raises(ReplayRefused, match="'plain' is not declared replayable=True"):
        replay(engine, handler="plain", last=5)
    with pytest.raises(ReplayRefused, match="No run 'nope'"):
        replay(engine, run_ids=["nope"])
    with pytest.raises(ReplayRefused, match="has no completed runs"):
        replay(engine, handler="nothing-ran", last=5)


def test_replays_pair_with_their_originals_and_diff_the_outputs(engine: Engine):
    version = {"tax": 10}
    seen: list[tuple[object, str | None]] = []

    def price(ctx):
        seen.append((ctx.data, ctx.replay))
        if ctx.data == 4 and ctx.replay:
            raise RuntimeError("broke in the new version")
        return {"net": ctx.data * 100, "tax": version["tax"] if ctx.data == 3 else 10}

    q = engine.queue("pricing", handler=price, replayable=True)
    q.add_bulk([1, 2, 3, 4])
    with running(engine):
        wait_until(lambda: len(completed_runs(engine, "pricing")) == 4)
        originals = {r["input"]: r for r in completed_runs(engine, "pricing")}
        version["tax"] = 12  # the "deploy": item 3 now answers differently
        set_id = replay(engine, handler="pricing", last=4, user="ops", source="test")
        result = settled(engine, set_id)
    assert result.summary == {"pending": 0, "running": 0, "identical": 2, "changed": 1, "failed": 1}
    assert result.summary_text() == "2 identical, 1 changed, 1 failed" and not result.ok
    by_input = {p.original["input"]: p for p in result.pairs if p.original}
    changed = by_input[3]
    assert changed.state == "changed" and [c.describe() for c in changed.changes] == [
        {"kind": "changed", "path": "$.tax", "before": 10, "after": 12}]
    assert by_input[4].state == "failed" and by_input[4].replay["status"] == "failed"
    for data, pair in by_input.items():
        assert pair.original_id == originals[data]["id"]
        assert pair.replay["replayOf"] == pair.original_id and pair.replay["replaySet"] == set_id
        assert pair.replay["attempts"] == 1  # one attempt: a replay's failure is not retried away
    replays = {data: of for data, of in seen if of}
    assert replays == {d: originals[d]["id"] for d in (1, 2, 3, 4)}
    # The failed replay is a dead letter with its replay fields: nothing lost.
    dead = engine.durable.get("queue_dlq:pricing", by_input[4].job_id)
    assert dead is not None and dead.value["replayOf"] == by_input[4].original_id


def test_a_scope_without_the_handler_reads_replayable_from_the_workers_definition(engine: Engine):
    q = engine.queue("echo", handler=lambda ctx: ctx.data, replayable=True)
    q.add({"a": 1})
    with running(engine):
        wait_until(lambda: completed_runs(engine, "echo"))
        board = engine.scoped(project=engine.config.project, environment=engine.config.environment)
        [original] = completed_runs(engine, "echo")
        set_id = replay(board, run_ids=[original["id"]], user="ops", source="test")
        result = settled(board, set_id)
        # The replay's own completed run is no baseline for the next check: only the original is chosen.
        again = settled(board, replay(board, handler="echo", last=10))
    assert [p.original_id for p in again.pairs] == [original["id"]]
    assert result.ok and result.summary["identical"] == 1
    assert result.record["selection"] == {"runIds": [original["id"]]} and result.record["createdBy"] == "ops"
    assert read_replay_set(board, "no-such-set") is None


def test_a_set_reads_its_replays_by_its_correlation_id_not_by_the_handlers_traffic(engine: Engine):
    q = engine.queue("busy", handler=lambda ctx: ctx.data, replayable=True)
    q.add(1)
    with running(engine):
        wait_until(lambda: completed_runs(engine, "busy"))
    set_id = replay(engine, handler="busy", last=1)  # no worker now: its replay stays pending
    [original] = completed_runs(engine, "busy")
    later = now_ms()
    # 1,200 later runs of the handler, none of them the set's: a busy hour's traffic.
    engine.durable.insert_many([RecordWrite(RUNS, f"other-{i}", {**original, "id": f"other-{i}", "jobId": f"j{i}",
                                                                 "startedAt": later + i, "correlationId": f"c{i}"})
                                for i in range(1200)])
    listed: list[int] = []
    plain_list = engine.durable.list

    def counted_list(*args, **kwargs):
        page = plain_list(*args, **kwargs)
        listed.append(len(page.records))
        return page

    engine.durable.list = counted_list  # type: ignore[method-assign]
    found = read_replay_set(engine, set_id)
    assert found is not None and [p.state for p in found.pairs] == ["pending"]
    assert sum(listed) <= 1, listed  # the set's own runs (none yet), not the handler's 1,200
