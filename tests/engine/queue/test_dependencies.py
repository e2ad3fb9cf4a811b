"""Job dependencies: children wait for parents; failures follow the child's policy."""

from __future__ import annotations

import pytest

from oqronkit import Engine, InvalidJob

from .conftest import fast_services, running, wait_until


def test_child_waits_for_parent_then_runs(engine: Engine):
    order = []
    q = engine.queue("flow", handler=lambda ctx: order.append(ctx.data), concurrency=1)
    parent = q.add("parent", delay=0.3)
    child = q.add("child", depends_on=[parent])
    assert child.status == "waiting-dependencies"
    with running(engine):
        wait_until(lambda: order == ["parent", "child"])


def test_dependency_on_an_unknown_job_is_refused(engine: Engine):
    q = engine.queue("flow")  # a finished parent is satisfied: test_missing_parents.py
    with pytest.raises(InvalidJob, match="do not exist: flow/never-existed"):
        q.add("x", depends_on=["never-existed"])


@pytest.mark.parametrize("policy,expected", [("cascade-fail", "dead"), ("ignore", "ran"), ("block", "blocked")])
def test_parent_failure_policies(engine: Engine, policy, expected):
    ran = []
    parents = engine.queue("parents", handler=lambda ctx: ctx.discard("nope"))
    children = engine.queue("kids", handler=lambda ctx: ran.append(ctx.job_id))
    parent = parents.add({})
    child = children.add({}, depends_on=[parent], parent_failure=policy)
    with running(engine):
        wait_until(lambda: engine.durable.get("queue_dlq:parents", parent.id) is not None)
        if expected == "ran":
            wait_until(lambda: ran == [child.id])
        elif expected == "dead":
            wait_until(lambda: engine.durable.get("queue_dlq:kids", child.id) is not None)
            assert "parent failed" in engine.durable.get("queue_dlq:kids", child.id).value["deadReason"]
        else:
            wait_until(lambda: engine.durable.get("queue_job:kids", child.id).value["status"] == "blocked")
    if expected == "blocked":
        # Retrying the parent (now succeeding) releases the blocked child.
        parents.handler(lambda ctx: "ok")
        parents.retry(parent.id)
        with running(engine):
            wait_until(lambda: ran == [child.id])


def test_cancelled_parent_follows_the_policy(engine: Engine):
    q = engine.queue("flow")
    parent = q.add("p", delay=600)
    child = q.add("c", depends_on=[parent], parent_failure="cascade-fail")
    assert q.cancel(parent.id)
    assert engine.durable.get("queue_dlq:flow", child.id) is not None


def test_cycles_and_self_dependencies_are_rejected(engine: Engine):
    q = engine.queue("flow")
    with pytest.raises(InvalidJob, match="itself"):
        q.add("x", job_id="a", depends_on=["a"])
    with pytest.raises(InvalidJob, match="cycle"):
        q.add_bulk([{"data": 1, "job_id": "a", "depends_on": ["b"]}, {"data": 2, "job_id": "b", "depends_on": ["a"]}])
    assert engine.durable.count("queue_job:flow") == 0


def test_bulk_children_before_parents_wait(engine: Engine):
    order = []
    q = engine.queue("flow", handler=lambda ctx: order.append(ctx.data), concurrency=1)
    q.add_bulk([{"data": "child", "depends_on": ["p"]}, {"data": "parent", "job_id": "p", "delay": 0.2}])
    with running(engine):
        wait_until(lambda: order == ["parent", "child"])


def test_sweep_releases_a_child_whose_parent_finished_unnoticed(engine: Engine):
    """A parent that completed without knowing its child (a race during add) must not
    strand the child: the leader's sweep releases it."""
    ran = []
    q = engine.queue("flow", handler=lambda ctx: ran.append(ctx.data))
    parent = q.add("p", delay=600)
    child = q.add("c", depends_on=[parent])
    engine.durable.delete("queue_job:flow", parent.id)  # finished elsewhere, dependents unrecorded
    engine.hot.remove("flow", [parent.id])
    with running(engine) as process:
        fast_services(process)
        wait_until(lambda: ran == ["c"])
    assert child.id
