"""The reconciler re-signals durable jobs the hot plane lost, and never one a worker
claimed and finished while the reconciler was looking."""

from __future__ import annotations

import pytest

from oqronkit import Engine
from oqronkit.backends.hot_types import Signal
from oqronkit.clock import now_ms
from oqronkit.services.reconciler import Reconciler


def finish_during_presence_check(engine: Engine, queue: str, job_id: str, *, durable_first: bool) -> None:
    """Make the hot plane's next ``present`` call run a worker's whole claim and completion
    first, as if it happened between the reconciler's durable list and that check. A
    worker acks the hot plane before it deletes the durable job, so ``durable_first=False``
    leaves the durable delete for after the check."""
    plane = engine.hot.plane
    real_present = plane.present

    def present(*args, **kwargs):
        del plane.present  # once
        leases = engine.hot.claim(queue, worker_id="racer", limit=1, lease_ms=30_000, now=now_ms())
        assert [lease.job_id for lease in leases] == [job_id]
        if durable_first:
            engine.durable.delete(f"queue_job:{queue}", job_id)
        engine.hot.ack(queue, leases)
        found = real_present(*args, **kwargs)
        if not durable_first:
            engine.durable.delete(f"queue_job:{queue}", job_id)
        return found

    plane.present = present


@pytest.mark.parametrize("durable_first", [True, False], ids=["durable-then-hot", "hot-then-durable"])
def test_a_job_finished_between_the_list_and_the_presence_check_is_not_signalled(engine: Engine, durable_first):
    q = engine.queue("race")
    job = q.add({"x": 1})
    reconciler = Reconciler(engine)
    finish_during_presence_check(engine, "race", job.id, durable_first=durable_first)
    assert reconciler.run(["race"]) == 0
    assert reconciler.run(["race"]) == 0
    assert engine.hot.present("race", [job.id]) == set()
    assert engine.hot.depths("race", now_ms()).ready == 0


def test_a_lost_job_is_signalled_again_once_it_is_missing_on_two_passes(engine: Engine):
    q = engine.queue("lost")
    waiting, delayed = q.add({"x": 1}), q.add({"x": 2}, delay=600)
    reconciler = Reconciler(engine)
    assert reconciler.run(["lost"]) == 0  # all there
    engine.hot.remove("lost", [waiting.id, delayed.id])  # e.g. a Redis restart
    assert reconciler.run(["lost"]) == 0  # missing once: maybe a worker just finished them
    assert engine.hot.present("lost", [waiting.id, delayed.id]) == set()
    assert reconciler.run(["lost"]) == 2
    assert engine.hot.present("lost", [waiting.id, delayed.id]) == {waiting.id, delayed.id}
    assert engine.hot.depths("lost", now_ms()).ready == 1
    assert reconciler.run(["lost"]) == 0  # no duplicates


def test_a_job_missing_on_passes_that_are_not_consecutive_is_not_signalled(engine: Engine):
    q = engine.queue("flaky")
    job = q.add({"x": 1})
    reconciler = Reconciler(engine)
    engine.hot.remove("flaky", [job.id])
    assert reconciler.run(["flaky"]) == 0
    engine.hot.signal("flaky", [Signal(job.id)], now_ms())  # back: signalled by someone else
    assert reconciler.run(["flaky"]) == 0
    engine.hot.remove("flaky", [job.id])
    assert reconciler.run(["flaky"]) == 0  # missing again, but the last pass saw it
    assert reconciler.run(["flaky"]) == 1


def test_a_pass_over_a_healthy_backlog_reads_no_job_record(engine: Engine, monkeypatch):
    q = engine.queue("backlog")
    for start in range(0, 2_500, 500):
        q.add_bulk([{"i": i} for i in range(start, start + 500)])
    reconciler = Reconciler(engine)

    def no_records(*args, **kwargs):
        raise AssertionError("the reconciler read job records although none was missing")

    monkeypatch.setattr(engine.durable, "get_many", no_records)
    monkeypatch.setattr(engine.durable, "list", no_records)
    assert reconciler.run(["backlog"]) == 0
    assert reconciler.run(["backlog"]) == 0
    monkeypatch.undo()
    lost = [j.id for j in q.list_jobs(status="waiting", limit=3)[0]]
    engine.hot.remove("backlog", lost)
    assert reconciler.run(["backlog"]) == 0 and reconciler.run(["backlog"]) == 3
