"""Replay as a tracked operation on every backend: every run the filter selects in the
frozen window, in chunks, each chunk's jobs and pairs written with the cursor (a runner
stopped mid-operation and resumed replays no run twice and skips none), pause and
cancel, and the replay set read a page at a time with a summary tallied per chunk."""

from __future__ import annotations

import pytest

from oqronkit import Engine
from oqronkit.clock import now_ms
from oqronkit.errors import BackendUnavailable, InvalidRecord
from oqronkit.namespaces import REPLAY_TALLIES, job_namespace
from oqronkit.operations import OperationRunner, Operations
from oqronkit.replay import ReplayRefused, read_replay_set
from tests.engine.queue.conftest import running, wait_until

from .seeds import put_run, seed_runs


class Crash(BaseException):
    """A process dying: nothing after it runs (BaseException: no handler catches it)."""


def replay_jobs(engine: Engine, queue: str) -> list[dict]:
    return [r.value for r in engine.durable.list(job_namespace(queue), limit=1000).records]


def double(ctx) -> dict:
    return {"double": 2 * ctx.data}


def test_replay_every_selected_run_in_chunks_and_page_the_set(engine: Engine) -> None:
    engine.queue("pricing", handler=double, replayable=True)
    originals = seed_runs(engine, "pricing", 7)
    put_run(engine, "pricing", 99, status="failed")  # not completed: not selected
    ops = Operations(engine)
    op = ops.create_replay(user="ann", handler="pricing", source="test")
    later = put_run(engine, "pricing", 100, output={}, started=now_ms() + 5)  # after the window froze
    assert (op.action, op.target, op.status, op.queues, op.planned) == ("replay", "runs", "running", ("pricing",), None)
    assert op.name == "Replay every completed run of pricing" and op.replay_set is not None
    OperationRunner(engine, owner="w1", chunk=3).drain()
    done = ops.get(op.id)
    assert (done.status, done.percent, done.progress.done, done.progress.failed) == ("done", 100, 7, 0)
    jobs = replay_jobs(engine, "pricing")
    assert sorted(j["replayOf"] for j in jobs) == sorted(originals) and later not in {j["replayOf"] for j in jobs}
    assert {j["replaySet"] for j in jobs} == {op.replay_set} and {j["maxAttempts"] for j in jobs} == {1}
    first = read_replay_set(engine, op.replay_set)
    assert first is not None and (first.page, first.pages, first.count) == (1, 3, 7)
    assert [p.original_id for p in first.pairs] == originals[:3]  # newest first
    assert {p.state for p in first.pairs} == {"pending"} and not first.done
    last = read_replay_set(engine, op.replay_set, page=3)
    assert last is not None and [p.original_id for p in last.pairs] == originals[6:]
    assert read_replay_set(engine, op.replay_set, page=99).page == 3  # type: ignore[union-attr]
    with running(engine):
        def settled() -> bool:
            """every replay finished and every chunk tallied"""
            found = read_replay_set(engine, op.replay_set)  # type: ignore[arg-type]
            return found is not None and found.done
        wait_until(settled, timeout=30)
    found = read_replay_set(engine, op.replay_set)
    assert found is not None and found.ok and found.summary["identical"] == 7 and found.count == 7
    tally = engine.durable.get(REPLAY_TALLIES, op.replay_set)
    assert tally is not None and sorted(tally.value["chunks"]) == ["000001", "000002", "000003"]
    assert found.describe()["pages"] == 3 and len(found.describe()["pairs"]) == 3


def test_last_and_the_window_limit_the_walk_and_replays_are_never_replayed(engine: Engine) -> None:
    engine.queue("pricing", handler=double, replayable=True)
    seed_runs(engine, "pricing", 6, started=1_000_000)
    put_run(engine, "pricing", 5, output={}, started=1_000_010, extra={"replayOf": "x", "replaySet": "y"})
    ops = Operations(engine)
    op = ops.create_replay(user="ann", handler="pricing", last=4, started_from=1_000_001)
    assert op.name == "Replay the last 4 completed runs of pricing"
    OperationRunner(engine, owner="w1", chunk=2).drain()
    done = ops.get(op.id)
    assert (done.status, done.progress.done) == ("done", 4)
    assert sorted(j["data"] for j in replay_jobs(engine, "pricing")) == [2, 3, 4, 5]
    windowed = ops.create_replay(user="ann", handler="pricing", started_from=1_000_000, started_to=1_000_002)
    OperationRunner(engine, owner="w1").drain()
    assert ops.get(windowed.id).progress.done == 2  # starts 1_000_000 and 1_000_001: the end is exclusive
    empty = ops.create_replay(user="ann", handler="pricing", started_from=1, started_to=2)
    OperationRunner(engine, owner="w1").drain()
    nothing = read_replay_set(engine, empty.replay_set)  # type: ignore[arg-type]
    assert nothing is not None and nothing.done and nothing.count == 0 and not nothing.ok


def test_refusals(engine: Engine) -> None:
    engine.queue("plain", handler=double)
    ops = Operations(engine)
    with pytest.raises(ReplayRefused, match="'plain' is not declared replayable=True"):
        ops.create_replay(user="ann", handler="plain")
    engine.queue("pricing", handler=double, replayable=True)
    for bad in ({"status": "nope"}, {"last": -1}, {"user": ""}, {"name": "x" * 600}):
        with pytest.raises(InvalidRecord):
            ops.create_replay(**{"user": "ann", "handler": "pricing", **bad})  # type: ignore[arg-type]
    with pytest.raises(InvalidRecord, match="replay and resend have their own"):
        ops.create("replay", user="ann")


def test_a_runner_stopped_after_a_chunk_is_resumed_without_a_double_or_a_gap(engine: Engine) -> None:
    engine.queue("pricing", handler=double, replayable=True)
    originals = seed_runs(engine, "pricing", 10)
    ops = Operations(engine)
    op = ops.create_replay(user="ann", handler="pricing")
    chunks: list[object] = []

    def crash_on_second(o: object) -> None:
        chunks.append(o)
        if len(chunks) == 2:
            raise Crash  # after the chunk's write, before its signals

    with pytest.raises(Crash):
        OperationRunner(engine, owner="w1", chunk=3, lock_ttl_ms=1, after_write=crash_on_second).drain()
    assert ops.get(op.id).progress.done == 6
    OperationRunner(engine, owner="w2", chunk=3).drain()
    done = ops.get(op.id)
    assert (done.status, done.progress.done, done.progress.scanned, done.progress.skipped) == ("done", 10, 10, 0)
    replayed = [j["replayOf"] for j in replay_jobs(engine, "pricing")]
    assert sorted(replayed) == sorted(originals)  # each once
    found = read_replay_set(engine, op.replay_set, page=4)  # type: ignore[arg-type]
    assert found is not None and found.pages == 4 and found.count == 10


def test_pause_and_cancel_after_the_chunk_in_flight(engine: Engine) -> None:
    engine.queue("pricing", handler=double, replayable=True)
    seed_runs(engine, "pricing", 9)
    ops = Operations(engine)
    op = ops.create_replay(user="ann", handler="pricing")
    assert OperationRunner(engine, owner="w1", chunk=2, after_write=lambda o: ops.pause(o.id, user="bob")).drain() == 1
    assert ops.get(op.id).status == "paused" and ops.get(op.id).progress.done == 2
    assert OperationRunner(engine, owner="w1", chunk=2).drain() == 0
    ops.resume(op.id, user="bob")
    OperationRunner(engine, owner="w1", chunk=2, after_write=lambda o: ops.cancel(o.id, user="cy")).drain()
    cancelled = ops.get(op.id)
    assert (cancelled.status, cancelled.progress.done) == ("cancelled", 4)
    assert len(replay_jobs(engine, "pricing")) == 4
    found = read_replay_set(engine, op.replay_set)  # type: ignore[arg-type]
    assert found is not None and found.count == 4 and not found.done  # its 4 replays have not run


def test_a_chunk_whose_write_fails_leaves_nothing_and_is_done_once_later(engine: Engine,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    engine.queue("pricing", handler=double, replayable=True)
    originals = seed_runs(engine, "pricing", 7)
    ops = Operations(engine)
    op = ops.create_replay(user="ann", handler="pricing")
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
