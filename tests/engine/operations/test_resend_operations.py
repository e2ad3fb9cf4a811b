"""Resend as a tracked operation on every backend: each delivery whose attempts the log's
filters match in the frozen window is sent once (a dead letter retried, a completed one
added again from its newest attempt's input, a queued one left), even when its attempts
fall in different chunks; a runner stopped mid-operation resends nothing twice."""

from __future__ import annotations

import pytest

from oqronkit import Engine
from oqronkit.clock import now_ms
from oqronkit.errors import InvalidRecord
from oqronkit.namespaces import WEBHOOK, dlq_namespace, job_namespace, operation_items_namespace
from oqronkit.operations import OperationRunner, Operations
from oqronkit.webhooks.handles import delivery_queue
from oqronkit.webhooks.webhook import webhooks_for

from .seeds import delivery, webhook


class Crash(BaseException):
    """A process dying: nothing after it runs."""


def jobs(engine: Engine, queue: str) -> dict[str, dict]:
    return {r.id: r.value for r in engine.durable.list(job_namespace(queue), limit=1000).records}


def test_each_matching_delivery_is_sent_once(engine: Engine) -> None:
    hook = webhook(engine)
    q = hook.queue.name
    now = now_ms()
    dead = delivery(hook, attempts=("failed", "failed", "failed"), started=now - 9000, end="dead")
    completed = delivery(hook, attempts=("failed", "completed"), started=now - 8000, end="completed")
    queued = delivery(hook, started=now - 7000)
    other_event = delivery(hook, "user.created", started=now - 6000, end="dead")
    ops = Operations(engine)
    op = ops.create_resend(user="ann", since=now - 60_000, webhook="billing", event="order.paid", source="test")
    late = delivery(hook, started=now_ms() + 5, end="dead")  # its attempt started after the window froze
    assert (op.action, op.target, op.queues) == ("resend", "deliveries", ("webhook/billing",))
    assert op.name == "Resend deliveries of webhook billing, event 'order.paid'"
    before = jobs(engine, q)[queued]
    OperationRunner(engine, owner="w1", chunk=2).drain()  # a delivery's attempts span chunks
    done = ops.get(op.id)
    assert (done.status, done.progress.done, done.progress.failed, done.progress.scanned) == ("done", 2, 0, 7)
    now_jobs = jobs(engine, q)
    assert now_jobs[dead]["status"] == "waiting" and now_jobs[dead]["attempts"] == 0
    assert engine.durable.get(dlq_namespace(q), dead) is None
    assert now_jobs[completed]["status"] == "waiting" and now_jobs[completed]["data"] == hook.queue.get_job(
        completed).data  # type: ignore[union-attr]
    assert now_jobs[completed]["data"]["event"] == "order.paid" and now_jobs[completed]["maxAttempts"] == 3
    assert now_jobs[queued] == before  # still queued: left as it is
    for untouched in (other_event, late):
        assert engine.durable.get(dlq_namespace(q), untouched) is not None
    handled = {r.id: r.value["outcome"] for r in engine.durable.list(operation_items_namespace(op.id)).records}
    assert handled == {f"billing/{dead}": "resent", f"billing/{completed}": "resent", f"billing/{queued}": "queued"}


def test_a_runner_stopped_after_a_chunk_resends_nothing_twice(engine: Engine) -> None:
    hook = webhook(engine)
    now = now_ms()
    ids = [delivery(hook, attempts=("completed",), started=now - 9000 + n, end="completed") for n in range(7)]
    ops = Operations(engine)
    op = ops.create_resend(user="ann", since=now - 60_000)
    assert op.name == "Resend deliveries of every webhook" and op.queues == ()
    calls: list[object] = []

    def crash_on_second(o: object) -> None:
        calls.append(o)
        if len(calls) == 2:
            raise Crash

    with pytest.raises(Crash):
        OperationRunner(engine, owner="w1", chunk=3, lock_ttl_ms=1, after_write=crash_on_second).drain()
    assert ops.get(op.id).progress.done == 6
    # Meanwhile the workers delivered what was resent: the jobs are gone again.
    for job_id in jobs(engine, hook.queue.name):
        engine.durable.delete(job_namespace(hook.queue.name), job_id)
    OperationRunner(engine, owner="w2", chunk=3).drain()
    done = ops.get(op.id)
    assert (done.status, done.progress.done, done.progress.scanned) == ("done", 7, 7)
    assert set(jobs(engine, hook.queue.name)) == {ids[0]}  # the oldest, in the last chunk; none again


def test_a_webhook_no_longer_defined_fails_its_deliveries_visibly(engine: Engine) -> None:
    hook = webhook(engine)
    now = now_ms()
    gone = delivery(hook, started=now - 5000, end="dead")
    engine.durable.delete(WEBHOOK, "billing")
    op = Operations(engine).create_resend(user="ann", since=now - 60_000)
    OperationRunner(engine, owner="w1").drain()
    done = Operations(engine).get(op.id)
    assert (done.status, done.progress.done, done.progress.failed) == ("done", 0, 1)
    assert done.progress.errors[0]["id"] == gone and "no longer defined" in done.progress.errors[0]["error"]


def test_refusals_and_an_undeclared_webhook_stays_out_of_the_registry(engine: Engine) -> None:
    ops = Operations(engine)
    for bad in ({"status": "nope"}, {"since": -1}, {"before": "soon"}, {"webhook": "x\x00"}):
        with pytest.raises(InvalidRecord):
            ops.create_resend(**{"user": "ann", "since": 0, **bad})  # type: ignore[arg-type]
    queue = delivery_queue(engine, "elsewhere", {"scheduleMs": [0, 1000], "timeoutMs": 2000})
    assert queue.name == "webhook/elsewhere" and queue.retries == 1
    assert "elsewhere" not in webhooks_for(engine.registry) and "webhook/elsewhere" not in engine.registry.queues
    declared = webhook(engine)
    assert delivery_queue(engine, "billing", {}) is declared.queue


def test_pause_resume_and_cancel_a_resend(engine: Engine) -> None:
    hook = webhook(engine)
    now = now_ms()
    for n in range(6):
        delivery(hook, started=now - 9000 + n, end="dead")
    ops = Operations(engine)
    op = ops.create_resend(user="ann", since=now - 60_000)
    assert OperationRunner(engine, owner="w1", chunk=2, after_write=lambda o: ops.pause(o.id, user="bob")).drain() == 1
    assert (ops.get(op.id).status, ops.get(op.id).progress.done) == ("paused", 2)
    assert OperationRunner(engine, owner="w1", chunk=2).drain() == 0
    ops.resume(op.id, user="bob")
    OperationRunner(engine, owner="w1", chunk=2, after_write=lambda o: ops.cancel(o.id, user="cy")).drain()
    cancelled = ops.get(op.id)
    assert (cancelled.status, cancelled.progress.done) == ("cancelled", 4)
    assert hook.queue.counts()["dead"] == 2  # the rest stays dead
