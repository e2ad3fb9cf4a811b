"""Replaying an explicit list of run ids as a tracked operation on every backend: the list
stored in parts with the operation, walked in chunks that cross the parts' edges, runs of
several handlers in one set, the runs that cannot be replayed counted as failed by name,
a runner stopped mid-list resumed with no run replayed twice, pause and cancel, and
``replay_or_track`` choosing at once or tracked by the list's size."""

from __future__ import annotations

import pytest

from oqronkit import Engine
from oqronkit.errors import BackendUnavailable, InvalidRecord
from oqronkit.namespaces import job_namespace, operation_items_namespace
from oqronkit.operations import OperationRunner, Operations
from oqronkit.operations import replaying_ids as module
from oqronkit.operations.replaying_ids import replay_or_track
from oqronkit.replay import read_replay_set
from tests.engine.queue.conftest import running, wait_until

from .seeds import put_run, seed_runs
from .test_replay_operations import Crash, double, replay_jobs


def triple(ctx) -> dict:
    return {"double": 3 * ctx.data}


@pytest.fixture
def small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parts of 4 ids, so a list of ten crosses two edges of the stored selection."""
    monkeypatch.setattr(module, "PART_SIZE", 4)


def test_a_list_across_handlers_is_replayed_once_each_in_chunks(engine: Engine, small_parts: None) -> None:
    engine.queue("pricing", handler=double, replayable=True)
    engine.queue("tax", handler=triple, replayable=True)
    engine.queue("plain", handler=double)
    pricing, tax = seed_runs(engine, "pricing", 6), seed_runs(engine, "tax", 3)
    refused = put_run(engine, "plain", 1, output={"double": 2})
    wanted = [*pricing[:3], tax[0], "no-such-run", *pricing[3:], refused, *tax[1:], pricing[0]]  # one id twice
    ops = Operations(engine)
    op = ops.create_replay_ids(user="ann", run_ids=wanted, source="test")
    assert (op.action, op.target, op.planned, op.filter.to_value()) == ("replay", "run_ids", 11,
                                                                        {"runIds": 11, "parts": 3})
    assert op.name == "Replay 11 selected runs" and op.percent == 0
    parts = engine.durable.list(operation_items_namespace(op.id)).records
    assert [len(p.value["runIds"]) for p in parts] == [4, 4, 3]
    OperationRunner(engine, owner="w1", chunk=3).drain()
    done = ops.get(op.id)
    assert (done.status, done.percent, done.progress.done, done.progress.failed) == ("done", 100, 9, 2)
    assert done.progress.scanned == 11 and done.progress.chunks == 5  # 3+1, 3+1, 3: per part
    reasons = sorted(e["error"] for e in done.progress.errors)
    assert reasons == ["Handler 'plain' is not declared replayable=True.",
                       "No run 'no-such-run' in this project and environment."]
    replayed = [j["replayOf"] for j in replay_jobs(engine, "pricing") + replay_jobs(engine, "tax")]
    assert sorted(replayed) == sorted(pricing + tax)  # each once, the repeated id too
    assert replay_jobs(engine, "plain") == []
    found = read_replay_set(engine, op.replay_set)  # type: ignore[arg-type]
    assert found is not None and found.count == 9 and found.record["handlers"] == ["pricing", "tax"]
    assert found.record["selection"] == {"runIds": 11}
    with running(engine):
        def settled() -> bool:
            """every replay finished and every chunk tallied"""
            for page in range(1, 6):
                read_replay_set(engine, op.replay_set, page=page)  # type: ignore[arg-type]
            now = read_replay_set(engine, op.replay_set)  # type: ignore[arg-type]
            return now is not None and now.done
        wait_until(settled, timeout=30)
    final = read_replay_set(engine, op.replay_set)  # type: ignore[arg-type]
    assert final is not None and final.summary["identical"] == 7 and final.summary["changed"] == 2  # tax 0*3 == 0*2
    pairs = [p for page in range(1, final.pages + 1)
             for p in read_replay_set(engine, op.replay_set, page=page).pairs]  # type: ignore[arg-type, union-attr]
    assert {p.queue for p in pairs if p.original_id in tax} == {"tax"}  # each pair names its own queue


def test_a_runner_stopped_mid_list_resumes_without_a_double_or_a_gap(engine: Engine, small_parts: None) -> None:
    engine.queue("pricing", handler=double, replayable=True)
    originals = seed_runs(engine, "pricing", 10)
    ops = Operations(engine)
    op = ops.create_replay_ids(user="ann", run_ids=originals)
    chunks: list[object] = []

    def crash_on_third(o: object) -> None:
        chunks.append(o)
        if len(chunks) == 3:
            raise Crash  # after the chunk's write, before its signals

    with pytest.raises(Crash):
        OperationRunner(engine, owner="w1", chunk=3, lock_ttl_ms=1, after_write=crash_on_third).drain()
    stopped = ops.get(op.id)
    assert (stopped.progress.done, stopped.progress.queue_index, stopped.progress.cursor) == (7, 1, "3")
    OperationRunner(engine, owner="w2", chunk=3).drain()
    done = ops.get(op.id)
    assert (done.status, done.progress.done, done.progress.scanned, done.progress.failed) == ("done", 10, 10, 0)
    assert sorted(j["replayOf"] for j in replay_jobs(engine, "pricing")) == sorted(originals)


def test_pause_and_cancel_after_the_chunk_in_flight(engine: Engine) -> None:
    engine.queue("pricing", handler=double, replayable=True)
    originals = seed_runs(engine, "pricing", 9)
    ops = Operations(engine)
    op = ops.create_replay_ids(user="ann", run_ids=originals)
    assert OperationRunner(engine, owner="w1", chunk=2, after_write=lambda o: ops.pause(o.id, user="bob")).drain() == 1
    assert ops.get(op.id).status == "paused" and OperationRunner(engine, owner="w1", chunk=2).drain() == 0
    ops.resume(op.id, user="bob")
    OperationRunner(engine, owner="w1", chunk=2, after_write=lambda o: ops.cancel(o.id, user="cy")).drain()
    cancelled = ops.get(op.id)
    assert (cancelled.status, cancelled.progress.done, cancelled.percent) == ("cancelled", 4, 44)
    assert sorted(j["replayOf"] for j in replay_jobs(engine, "pricing")) == sorted(originals[:4])  # in list order


def test_replay_or_track_chooses_by_the_lists_size(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    engine.queue("pricing", handler=double, replayable=True)
    originals = seed_runs(engine, "pricing", 5)
    monkeypatch.setattr(module, "MAX_REPLAYS", 4)
    ops = Operations(engine)
    set_id, op = replay_or_track(ops, user="ann", run_ids=originals[:4], source="test")
    assert op is None and len(replay_jobs(engine, "pricing")) == 4  # at once
    at_once = read_replay_set(engine, set_id)
    assert at_once is not None and at_once.count == 4 and not at_once.record.get("operation")
    set_id, op = replay_or_track(ops, user="ann", run_ids=[*originals, originals[0]], source="test")
    assert op is not None and op.replay_set == set_id and op.planned == 5 and op.status == "running"
    assert engine.durable.count(job_namespace("pricing")) == 4  # nothing more until the runner's chunk


def test_refusals(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    ops = Operations(engine)
    monkeypatch.setattr(module, "MAX_IDS", 3)
    with pytest.raises(InvalidRecord, match="At most 3 run ids"):
        ops.create_replay_ids(user="ann", run_ids=["a", "b", "c", "d", "a"])
    ops.create_replay_ids(user="ann", run_ids=["a", "b", "c", "a"])  # three once deduplicated
    monkeypatch.undo()
    for bad in ([], [""], [7], ["a\x00b"], ["x" * 201]):
        with pytest.raises(InvalidRecord):
            ops.create_replay_ids(user="ann", run_ids=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidRecord, match="user"):
        ops.create_replay_ids(user="", run_ids=["r1"])
    assert len(ops.list()[0]) == 1


def test_a_chunk_whose_write_fails_leaves_nothing_and_is_done_once_later(engine: Engine,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    engine.queue("pricing", handler=double, replayable=True)
    originals = seed_runs(engine, "pricing", 7)
    ops = Operations(engine)
    op = ops.create_replay_ids(user="ann", run_ids=originals)
    calls = {"n": 0}
    real = engine.durable.apply

    def flaky(**kwargs: object) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise BackendUnavailable("the database went away mid-chunk")
        real(**kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(engine.durable, "apply", flaky)
    with pytest.raises(BackendUnavailable):
        OperationRunner(engine, owner="w1", chunk=3).drain()
    assert ops.get(op.id).progress.done == 3 and len(replay_jobs(engine, "pricing")) == 3  # chunk 2 left nothing
    OperationRunner(engine, owner="w1", chunk=3).drain()
    assert ops.get(op.id).progress.done == 7
    assert sorted(j["replayOf"] for j in replay_jobs(engine, "pricing")) == sorted(originals)
    found = read_replay_set(engine, op.replay_set, page=3)  # type: ignore[arg-type]
    assert found is not None and found.pages == 3 and [p.original_id for p in found.pairs] == originals[6:]


def test_clean_ids_refuses_a_non_text_id_by_name():
    from oqronkit.errors import InvalidRecord
    from oqronkit.operations.replaying_ids import clean_ids

    with pytest.raises(InvalidRecord, match="A run id is text"):
        clean_ids([{"id": "x"}, "y"])  # unhashable: refused, not a TypeError
    assert clean_ids(["b", "a", "b"]) == ["b", "a"]
