"""Issue 18: ``depends_on`` naming a job that does not exist is refused (InvalidJob,
nothing written) instead of running the child at once; a parent that completed (it
left oqron_jobs, its completed run remains) still counts as done."""

from __future__ import annotations

import pytest

from oqronkit import Engine, InvalidJob
from oqronkit.clock import now_ms
from oqronkit.queues.runs import finish_run, new_run

from .conftest import running, wait_until


def assert_nothing_written(engine: Engine, *queues: str) -> None:
    for queue in queues:
        assert engine.durable.count(f"queue_job:{queue}") == 0, queue
        assert engine.hot.depths(queue, now_ms()).ready == 0, queue


def test_a_parent_that_never_existed_is_refused(engine: Engine):
    q = engine.queue("flow")
    with pytest.raises(InvalidJob, match=r"depends_on names job\(s\) that do not exist: flow/never-existed "):
        q.add("x", depends_on=["never-existed"])
    with pytest.raises(InvalidJob, match="do not exist: other/p1, flow/p2"):
        q.add("x", depends_on=[("other", "p1"), "p2"])
    with pytest.raises(InvalidJob, match="do not exist: flow/ghost"):
        q.add_bulk([{"data": 1, "job_id": "real"}, {"data": 2, "depends_on": ["real", "ghost"]}])
    assert_nothing_written(engine, "flow", "other")


def test_a_parent_that_completed_earlier_is_satisfied(engine: Engine):
    ran = []
    q = engine.queue("flow", handler=lambda ctx: ran.append(ctx.data))
    parent = q.add("p")
    named = q.add("named", job_id="nightly-2026-01-01")
    with running(engine):
        wait_until(lambda: ran.count("p") == 1 and ran.count("named") == 1)
        wait_until(lambda: engine.durable.get("queue_job:flow", parent.id) is None
                   and engine.durable.get("queue_job:flow", named.id) is None)
    child = q.add("c", depends_on=[parent, "nightly-2026-01-01"])
    assert child.status == "waiting" and child.pending == []
    with running(engine):
        wait_until(lambda: "c" in ran)


def test_a_parent_whose_only_runs_failed_or_are_elsewhere_is_refused(engine: Engine):
    """A run of the same id in another queue, or a run that did not complete, is no
    evidence that this parent completed."""
    for queue, status in (("elsewhere", "completed"), ("flow", "failed")):
        run = new_run(name=queue, module="queue", trigger="queue", input=None, attempts=1, app="a",
                      environment="e", worker_id="w", job_id="p")
        finish_run(run, status)
        engine.durable.put("runs", run["id"], run)
    with pytest.raises(InvalidJob, match="do not exist: flow/p"):
        engine.queue("flow").add("c", depends_on=["p"])
    assert_nothing_written(engine, "flow")


def test_a_completed_run_beyond_the_scan_is_not_found(engine: Engine, monkeypatch: pytest.MonkeyPatch):
    """The search is bounded (COMPLETED_RUN_SCAN runs, newest first): a parent completed
    longer ago than that is refused, as docs/how-to/retries-and-dead-letters.md says."""
    from oqronkit.queues import dependencies

    monkeypatch.setattr(dependencies, "COMPLETED_RUN_SCAN", 3)
    for n in range(5):
        run = new_run(name="flow", module="queue", trigger="queue", input=None, attempts=1, app="a",
                      environment="e", worker_id="w", job_id=f"old-{n}", started_at=now_ms() - 1000 + n)
        finish_run(run, "completed")
        engine.durable.put("runs", run["id"], run)
    q = engine.queue("flow")
    assert q.add("c", depends_on=["old-2"]).status == "waiting"  # among the latest three
    with pytest.raises(InvalidJob, match="do not exist: flow/old-1"):
        q.add("c", depends_on=["old-1"])
