"""A correlation id travels from the producer through runs to what they make, and the
engine's trace reads it back nested by cause, on every mode."""

from __future__ import annotations

import pytest

from oqronkit import Engine, InvalidJob, correlate

from .conftest import running, wait_until


def test_a_handler_passes_its_id_on_and_the_trace_nests_by_cause(engine: Engine):
    orders = engine.topic("orders")
    engine.queue("emails", handler=lambda ctx: "sent")

    def checkout(ctx):
        # The id is in effect without being passed: a plain add and a publish inherit it.
        engine.get_queue("emails").add({"to": "a@x"})
        orders.publish({"order": 1})
        return "ok"

    engine.queue("checkout", handler=checkout)
    with correlate("req-7") as cid:
        first = engine.get_queue("checkout").add({"cart": 1})
    assert cid == "req-7" and first.correlation_id == "req-7" and first.caused_by is None
    with running(engine):
        wait_until(lambda: engine.durable.count("queue_job:emails") == 0
                   and engine.durable.count("queue_job:checkout") == 0
                   and len(engine.trace("req-7").entries) >= 3
                   and all(e.status != "running" for e in engine.trace("req-7").entries if e.kind == "run"))
    trace = engine.trace("req-7")
    kinds = [(e.kind, e.title, e.depth) for e in trace.entries]
    assert kinds[0] == ("run", "checkout", 0)  # its job row is gone (done): the run is the root
    checkout_run = trace.entries[0]
    below = {(e.kind, e.title) for e in trace.entries if e.parent == checkout_run.key}
    assert below == {("run", "emails"), ("message", "orders")}
    email_run = next(e for e in trace.entries if e.title == "emails")
    assert email_run.depth == 1 and email_run.status == "completed" and email_run.duration_ms is not None
    assert trace.to_json()["correlationId"] == "req-7" and not trace.truncated
    assert engine.trace("another").entries == []


def test_an_explicit_id_wins_and_no_id_costs_nothing(engine: Engine):
    q = engine.queue("plain")
    plain = q.add({})
    assert plain.correlation_id is None and plain.caused_by is None
    with correlate("outer"):
        job = q.add({}, correlation_id="inner")
        jobs = q.add_bulk([{"n": 1}, {"n": 2}])
    assert job.correlation_id == "inner" and job.caused_by is None
    assert [j.correlation_id for j in jobs] == ["outer", "outer"]
    stored = engine.durable.get("queue_job:plain", jobs[1].id)
    assert stored is not None and stored.value["correlationId"] == "outer"
    assert sorted(e.id for e in engine.trace("outer").entries) == sorted(j.id for j in jobs)
    with pytest.raises(InvalidJob):
        with correlate("bad\nid"):
            pass


def test_a_webhook_send_and_a_group_callback_carry_the_id(engine: Engine):
    from oqronkit import job_spec

    engine.queue("members")
    engine.queue("done")
    with correlate("batch-1"):
        engine.group([job_spec("members", {"n": 1})], on_complete=job_spec("done", {}))
    callback = [r for r in engine.durable.list("queue_job:done").records]
    assert callback and all(r.value["correlationId"] == "batch-1" for r in callback)
    assert {e.title for e in engine.trace("batch-1").entries} == {"members", "done"}
