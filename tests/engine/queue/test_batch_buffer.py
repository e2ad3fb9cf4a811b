"""Which batch a batch queue's slot takes next (no planes needed: the buffer alone)."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from oqronkit import Batch, Registry
from oqronkit.backends.hot_types import Lease
from oqronkit.queues.jobs import Job
from oqronkit.queues.queue import Queue
from oqronkit.worker.batch_buffer import BatchBuffer
from oqronkit.worker.inflight import Inflight


def buffer_for(batch: Batch, concurrency: int = 1) -> BatchBuffer:
    host = SimpleNamespace(registry=Registry())  # a queue needs only its registry to be declared
    queue = Queue("q", handler=lambda jobs: None, batch=batch, engine=host)  # type: ignore[arg-type]
    return BatchBuffer(queue, concurrency=concurrency, lock=threading.RLock())


def held(buffer: BatchBuffer, keys: list[str], at: float) -> list[Inflight]:
    attempts = [Inflight(job=Job(id=f"{k}-{n}-{at}", queue="q", data={"k": k}), lease=Lease(f"{k}-{n}", 1, 0),
                         run=None, queue=buffer.queue, deadline=None) for n, k in enumerate(keys)]
    with buffer.work:
        buffer.hold(attempts)
    for entries in buffer.groups.values():
        for entry in entries:
            if entry.inflight in attempts:
                entry.since = at
    return attempts


def test_a_full_key_is_taken_at_once_and_an_overdue_key_goes_first():
    buffer = buffer_for(Batch(size=3, max_wait=1.0, group_by="k"))
    held(buffer, ["b"], at=0.0)
    held(buffer, ["a", "a", "a", "a"], at=0.5)
    with buffer.work:  # the worker's lock, as every caller holds it
        assert buffer.next_batch(0.6) == (True, "a", 0.0)  # full; b waits 0.4 s more
        assert buffer.next_batch(1.2) == (True, "b", 0.0)  # b overdue: before the full a
        batch = buffer.take_batch("b", "batch-1")
        assert [i.job.data["k"] for i in batch.attempts] == ["b"] and buffer.calls == 1
        assert buffer.next_batch(1.2) is None  # the only call slot is busy
        buffer.end_call(batch)
        taken = buffer.take_batch("a", "batch-2")
        assert len(taken.attempts) == 3 and buffer.held_count == 1
        buffer.end_call(taken)
        assert buffer.next_batch(1.2) == (False, None, pytest.approx(0.3))  # one left, waiting
        assert buffer.next_batch(1.5) == (True, "a", 0.0)  # its oldest job arrived at 0.5: overdue now


def test_without_group_by_none_is_the_key_and_a_partial_batch_waits():
    buffer = buffer_for(Batch(size=10, max_wait=2.0))
    held(buffer, ["x"] * 4, at=0.0)
    assert buffer.next_batch(0.5) == (False, None, 1.5)
    assert buffer.next_batch(2.0) == (True, None, 0.0)
