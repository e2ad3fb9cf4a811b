"""Tracked bulk operations on every backend: counts, the frozen window, filters, pause,
resume, cancel, and a runner stopped mid-operation that a fresh one resumes without
doing a chunk twice or skipping one."""

from __future__ import annotations

import time

import pytest

from oqronkit import Engine
from oqronkit.clock import now_ms
from oqronkit.errors import BackendUnavailable, InvalidRecord, InvalidState, UnknownOperation
from oqronkit.namespaces import dlq_namespace, job_namespace
from oqronkit.operations import OperationRunner, Operations

from .conftest import make_dead


class Crash(BaseException):
    """A process dying: nothing after it runs (BaseException: no handler catches it)."""


def dead_ids(engine: Engine, queue: str) -> set[str]:
    return {r.id for r in engine.durable.list(dlq_namespace(queue), limit=1000).records}


def job_ids(engine: Engine, queue: str) -> set[str]:
    return {r.id for r in engine.durable.list(job_namespace(queue), limit=1000).records}


def test_retry_every_queue_in_chunks(engine: Engine) -> None:
    a, b = make_dead(engine, "ops-a", 7), make_dead(engine, "ops-b", 5)
    ops = Operations(engine)
    op = ops.create("retry", user="ann", source="test")
    assert (op.status, op.planned, op.queues, op.created_by) == ("running", 12, ("ops-a", "ops-b"), "ann")
    ran = OperationRunner(engine, owner="w1", chunk=3).drain()
    done = ops.get(op.id)
    assert done.status == "done" and done.percent == 100 and done.finished_at is not None
    assert (done.progress.done, done.progress.failed, done.progress.skipped, done.progress.scanned) == (12, 0, 0, 12)
    assert ran == done.progress.chunks >= 4  # 12 dead letters in chunks of 3 (a walk may end on an empty page)
    assert dead_ids(engine, "ops-a") == dead_ids(engine, "ops-b") == set()
    assert job_ids(engine, "ops-a") == set(a) and job_ids(engine, "ops-b") == set(b)
    waiting = engine.durable.get(job_namespace("ops-a"), a[0])
    assert waiting is not None and waiting.value["status"] == "waiting" and waiting.value["attempts"] == 0
    assert engine.hot.depths("ops-a", 0).ready + engine.hot.depths("ops-a", 2**62).ready >= 7


def test_window_is_frozen_and_filters_apply(engine: Engine) -> None:
    make_dead(engine, "ops-f", 4, reason="Timeout talking to bank")
    keep = make_dead(engine, "ops-f", 3, reason="Bad card")
    ops = Operations(engine)
    op = ops.create("delete", user="ann", queue="ops-f", search="timeout")
    time.sleep(0.005)  # the window closes at a millisecond and includes it
    later = make_dead(engine, "ops-f", 2, reason="Timeout again")  # died after the window closed
    OperationRunner(engine, owner="w1", chunk=2).drain()
    done = ops.get(op.id)
    assert done.status == "done"
    assert (done.planned, done.progress.done) == (7, 4)
    assert done.progress.skipped >= 3  # the walk may see the later ones too (a Redis SCAN may not)
    assert dead_ids(engine, "ops-f") == set(keep) | set(later)


def test_fingerprint_filter(engine: Engine) -> None:
    make_dead(engine, "ops-g", 3, reason="alpha")
    beta = make_dead(engine, "ops-g", 2, reason="beta")
    fingerprint = engine.durable.get(dlq_namespace("ops-g"), beta[0]).value["errorFingerprint"]  # type: ignore[union-attr]
    op = Operations(engine).create("retry", user="ann", queue="ops-g", fingerprint=fingerprint)
    OperationRunner(engine, owner="w1").drain()
    assert Operations(engine).get(op.id).progress.done == 2
    assert job_ids(engine, "ops-g") == set(beta)


def test_pause_resume_cancel(engine: Engine) -> None:
    make_dead(engine, "ops-p", 9)
    ops = Operations(engine)
    op = ops.create("delete", user="ann", queue="ops-p")
    runner = OperationRunner(engine, owner="w1", chunk=2, after_write=lambda o: ops.pause(o.id, user="bob"))
    assert runner.drain() == 1  # the pause lands after the first chunk: the runner stops there
    paused = ops.get(op.id)
    first = paused.progress.done
    assert paused.status == "paused" and 1 <= first < 9  # a chunk is 2 (a Redis SCAN page is about 2)
    assert OperationRunner(engine, owner="w1", chunk=2).drain() == 0  # nothing runs while paused
    with pytest.raises(InvalidState, match="paused"):
        ops.pause(op.id, user="bob")
    ops.resume(op.id, user="bob")
    OperationRunner(engine, owner="w1", chunk=2, after_write=lambda o: ops.cancel(o.id, user="cy")).drain()
    cancelled = ops.get(op.id)
    assert cancelled.status == "cancelled" and first < cancelled.progress.done < 9
    assert len(dead_ids(engine, "ops-p")) == 9 - cancelled.progress.done  # the rest stays
    assert [h["status"] for h in cancelled.history] == ["running", "paused", "running", "cancelled"]
    assert [h["by"] for h in cancelled.history] == ["ann", "bob", "bob", "cy"]
    with pytest.raises(InvalidState, match="cancelled"):
        ops.resume(op.id, user="bob")


def test_a_runner_stopped_after_a_chunk_is_resumed_without_a_double_or_a_gap(engine: Engine) -> None:
    ids = make_dead(engine, "ops-c", 10)
    ops = Operations(engine)
    op = ops.create("retry", user="ann", queue="ops-c")
    chunks = []

    def crash_on_second(o: object) -> None:
        chunks.append(o)
        if len(chunks) == 2:
            raise Crash  # after the chunk's write, before its signals

    with pytest.raises(Crash):
        OperationRunner(engine, owner="w1", chunk=3, lock_ttl_ms=1, after_write=crash_on_second).drain()
    assert 0 < ops.get(op.id).progress.done < 10
    OperationRunner(engine, owner="w2", chunk=3).drain()  # w1's lock has lapsed
    done = ops.get(op.id)
    assert (done.status, done.progress.done, done.progress.scanned, done.progress.skipped) == ("done", 10, 10, 0)
    assert job_ids(engine, "ops-c") == set(ids) and dead_ids(engine, "ops-c") == set()


def test_a_write_that_fails_leaves_the_chunk_whole_for_the_next_try(engine: Engine,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    ids = make_dead(engine, "ops-w", 5)
    ops = Operations(engine)
    op = ops.create("delete", user="ann", queue="ops-w")
    calls = {"n": 0}
    real = engine.durable.apply

    def flaky(**kwargs: object) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise BackendUnavailable("the database went away mid-operation")
        real(**kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(engine.durable, "apply", flaky)
    with pytest.raises(BackendUnavailable):
        OperationRunner(engine, owner="w1", chunk=2).drain()
    before = ops.get(op.id).progress.done
    assert 0 < before < 5 and len(dead_ids(engine, "ops-w")) == 5 - before  # the failed chunk left nothing
    OperationRunner(engine, owner="w1", chunk=2).drain()
    done = ops.get(op.id)
    assert (done.status, done.progress.done, done.progress.failed) == ("done", 5, 0)
    assert dead_ids(engine, "ops-w") == set() and len(ids) == 5


def test_two_runners_never_share_an_operation(engine: Engine) -> None:
    make_dead(engine, "ops-l", 4)
    op = Operations(engine).create("delete", user="ann", queue="ops-l")
    assert engine.hot.acquire_lock(f"operation:{op.id}", "other", ttl_ms=60_000, now=now_ms())
    assert OperationRunner(engine, owner="w1").drain() == 0
    engine.hot.release_lock(f"operation:{op.id}", "other")
    assert OperationRunner(engine, owner="w1").drain() >= 1


def test_listing_and_refusals(engine: Engine) -> None:
    ops = Operations(engine)
    first = ops.create("retry", user="ann", queue="ops-none")
    time.sleep(0.002)  # newest first: one millisecond apart
    second = ops.create("delete", user="ann")
    listed, cursor = ops.list(limit=1)
    assert [o.id for o in listed] == [second.id] and cursor is not None
    assert [o.id for o in ops.list(limit=1, cursor=cursor)[0]] == [first.id]
    assert {o.id for o in ops.list(status="running")[0]} == {first.id, second.id}
    assert first.to_dict()["counts"] == {"planned": 0, "scanned": 0, "done": 0, "failed": 0, "skipped": 0}
    with pytest.raises(InvalidRecord, match="Unknown bulk action"):
        ops.create("explode", user="ann")
    with pytest.raises(InvalidRecord, match="user"):
        ops.create("retry", user="")
    with pytest.raises(UnknownOperation):
        ops.get("nope")
    OperationRunner(engine, owner="w1").drain()
    assert ops.get(first.id).status == "done" and ops.get(first.id).progress.done == 0


def test_an_unreadable_dead_letter_counts_as_failed_and_a_bug_fails_the_operation(
        engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = make_dead(engine, "ops-x", 4)
    bad = engine.durable.get(dlq_namespace("ops-x"), ids[0])
    assert bad is not None
    unreadable = {k: v for k, v in bad.value.items() if k != "queue"}  # not a job any more
    engine.durable.put(dlq_namespace("ops-x"), ids[0], unreadable)
    ops = Operations(engine)
    op = ops.create("retry", user="ann", queue="ops-x")
    OperationRunner(engine, owner="w1").drain()
    done = ops.get(op.id)
    assert (done.status, done.progress.done, done.progress.failed) == ("done", 3, 1)
    assert done.progress.errors[0]["id"] == ids[0] and ids[0] in dead_ids(engine, "ops-x")

    broken = ops.create("delete", user="ann", queue="ops-x")

    def explode(*args: object, **kwargs: object) -> object:
        raise RuntimeError("a bug in the walk")

    monkeypatch.setattr(engine.durable, "scan_statuses_page", explode)
    OperationRunner(engine, owner="w1").drain()
    failed = ops.get(broken.id)
    assert failed.status == "failed" and failed.error == "RuntimeError: a bug in the walk"
    assert failed.finished_at is not None and failed.history[-1]["by"] == "operations-runner"
