"""Groups in every mode: the callback is enqueued once, with every member's output."""

from __future__ import annotations

import threading
import time

import pytest

from oqronkit import Engine, GroupNotFound, InvalidJob, get_group, group_results, job_spec
from oqronkit.clock import now_ms
from oqronkit.groups.ledger import KEEP_SETTLED_MS, prune_settled, sweep_groups
from tests.engine.queue.conftest import fast_services, running, wait_until


def _queues(engine: Engine, work, calls: list):
    """A member queue running ``work`` and two callback queues recording their calls."""
    members = engine.queue("work", handler=work, concurrency=4, backoff=0.05, retries=2)

    def record(kind):
        def callback(ctx):
            calls.append((kind, ctx.group_id, [(m.status, m.output) for m in group_results(ctx.group_id,
                                                                                             engine=engine)]))
        return callback

    engine.queue("done", handler=record("done"))
    engine.queue("failed", handler=record("failed"))
    return members


def test_the_callback_fires_once_with_every_output(engine: Engine):
    calls: list = []
    work = _queues(engine, lambda ctx: {"double": ctx.data * 2}, calls)
    gid = engine.group([job_spec(work, i) for i in range(6)] + [("work", 6, {"priority": 3})],
                       on_complete=job_spec("done", {"report": True}), on_failure=("failed", None), name="<b>x</b>")
    assert get_group(gid, engine=engine).status == "open"
    with running(engine) as process:
        fast_services(process)
        wait_until(lambda: calls)
        time.sleep(0.5)  # a sweep or two: nothing fires again
    assert calls == [("done", gid, [("completed", {"double": i * 2}) for i in range(7)])]
    info = get_group(gid, engine=engine)
    assert (info.status, info.outcome, info.name, info.total) == ("completed", "completed", "<b>x</b>", 7)
    assert engine.durable.get("queue_job:failed", f"{gid}:onFailure") is None  # the other callback dropped
    member = group_results(gid, engine=engine)[0]
    assert engine.durable.get("runs", member.run_id).value["groupId"] == gid  # the board links the run


@pytest.mark.parametrize("policy", ["first", "after_all"])
def test_on_failure_fires_once_per_policy(engine: Engine, policy):
    calls: list = []
    gate = threading.Event()

    def work(ctx):
        if ctx.data == "bad":
            ctx.discard("no good")
        gate.wait(5) if ctx.data == "slow" else None
        return ctx.data

    _queues(engine, work, calls)
    gid = engine.group([("work", "bad"), ("work", "slow"), ("work", "ok")], on_complete=("done", None),
                       on_failure=("failed", None), on_failure_policy=policy)
    with running(engine) as process:
        fast_services(process)
        if policy == "first":  # fires while a member still runs
            wait_until(lambda: calls)
            assert "pending" in [s for s, _ in calls[0][2]]  # the slow member
            gate.set()
        else:
            time.sleep(0.6)
            assert calls == []  # waits for the slow member
            gate.set()
            wait_until(lambda: calls)
            assert sorted(s for s, _ in calls[0][2]) == ["completed", "completed", "dead"]
        wait_until(lambda: get_group(gid, engine=engine).status == "failed")
        time.sleep(0.4)
    assert [c[0] for c in calls] == ["failed"]
    dead = [m for m in group_results(gid, engine=engine) if m.status == "dead"]
    assert len(dead) == 1 and "no good" in str(dead[0].error)


def test_a_member_retried_then_completing(engine: Engine):
    calls: list = []

    def flaky(ctx):
        if ctx.attempt == 1:
            raise RuntimeError("first try fails")
        return ctx.attempt

    _queues(engine, flaky, calls)
    gid = engine.group([("work", i) for i in range(3)], on_complete=("done", None), on_failure=("failed", None))
    with running(engine):
        wait_until(lambda: calls)
        time.sleep(0.3)
    assert calls == [("done", gid, [("completed", 2)] * 3)]


def test_the_sweep_finishes_a_group_a_crash_left(engine: Engine):
    """A member deleted without its group hearing (a crash after the deletion), then a
    group decided but not fired: the leader's sweep settles, decides and fires."""
    calls: list = []
    _queues(engine, lambda ctx: "ran", calls)
    gid = engine.group([("work", 1), ("work", 2)], on_complete=("done", None))
    ids = [m.job_id for m in group_results(gid, engine=engine)]
    for job_id in ids:  # completed "unnoticed": gone from the queue, no ledger update
        engine.durable.delete("queue_job:work", job_id)
    assert sweep_groups(engine.durable, engine.hot) == 1
    assert get_group(gid, engine=engine).status == "completed"
    assert engine.durable.get("queue_job:done", f"{gid}:onComplete").value["status"] == "waiting"
    # Decided, then the process died before firing: the sweep fires it.
    gid2 = engine.group([("work", 3)], on_complete=("done", None))
    engine.durable.delete("queue_job:work", group_results(gid2, engine=engine)[0].job_id)
    record = engine.durable.get("queue_groups", gid2).value
    engine.durable.put("queue_groups", gid2, {**record, "status": "firing", "outcome": "completed"})
    sweep_groups(engine.durable, engine.hot)
    assert get_group(gid2, engine=engine).status == "completed"
    with running(engine):
        wait_until(lambda: len(calls) == 2)
        time.sleep(0.3)
    assert sorted(c[1] for c in calls) == sorted([gid, gid2])
    # A week after firing, the sweep deletes a settled group, its ledger first.
    open_gid = engine.group([("work", 4)])
    assert prune_settled(engine.durable) == 0
    assert prune_settled(engine.durable, now=now_ms() + KEEP_SETTLED_MS + 1000) == 2
    for pruned in (gid, gid2):
        assert engine.durable.count(f"queue_group_members:{pruned}") == 0
        with pytest.raises(GroupNotFound):
            get_group(pruned, engine=engine)
    assert get_group(open_gid, engine=engine).status == "open"


def test_bad_groups_are_refused(engine: Engine):
    engine.queue("work")
    with pytest.raises(InvalidJob, match="1 to"):
        engine.group([])
    with pytest.raises(InvalidJob, match="job_id"):
        engine.group([("work", 1, {"job_id": "x"})])
    with pytest.raises(InvalidJob, match="debounce"):
        engine.group([("work", 1, {"debounce": 5, "unique_key": "k"})])
    with pytest.raises(InvalidJob, match="unknown add option"):
        engine.group([job_spec("work", 1, prioirty=3)])
    with pytest.raises(InvalidJob, match="delay"):
        engine.group([("work", 1)], on_complete=job_spec("work", 2, delay=5))
    with pytest.raises(InvalidJob, match="job_spec"):
        engine.group(["work"])
    with pytest.raises(InvalidJob, match="on_failure_policy"):
        engine.group([("work", 1)], on_failure_policy="never")
    with pytest.raises(GroupNotFound):
        group_results("nope", engine=engine)
    assert engine.durable.count("queue_job:work") == 0
    gid = engine.group([("work", 1)], group_id="g1")
    assert engine.group([("work", 1), ("work", 2)], group_id="g1") == gid  # idempotent
    assert engine.durable.count("queue_job:work") == 1


def test_a_cancelled_member_fails_the_group(engine: Engine):
    engine.queue("work")
    engine.queue("failed")
    gid = engine.group([("work", 1), ("work", 2)], on_complete=("work", "never"), on_failure=("failed", None))
    first = group_results(gid, engine=engine)[0]
    assert engine.get_queue("work").cancel(first.job_id)
    assert get_group(gid, engine=engine).status == "failed"
    assert engine.durable.get("queue_job:failed", f"{gid}:onFailure").value["status"] == "waiting"
    assert engine.durable.get("queue_job:work", f"{gid}:onComplete") is None
    assert [m.status for m in group_results(gid, engine=engine)] == ["dead", "pending"]
