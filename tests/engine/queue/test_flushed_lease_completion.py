"""A job whose lease the hot plane lost entirely while it ran (a Redis flush, the hot
tables' rows lost) completes once: its completion re-creates the lease under its token
and is kept, in every mode, the postgres mode's one-transaction settle included (which
used to call it lost, leaving the job to run again)."""

from __future__ import annotations

import threading

from oqronkit import Engine
from oqronkit.namespaces import RUNS, job_namespace
from oqronkit.services.reconciler import Reconciler
from tests.engine.queue.conftest import running, wait_until


def test_a_completion_after_the_hot_plane_lost_its_lease_is_kept(engine: Engine):
    started, finish, calls = threading.Event(), threading.Event(), []

    def handler(ctx):
        calls.append(ctx.job_id)
        started.set()
        assert finish.wait(20)
        return {"ok": True}

    q = engine.queue("flushed", handler=handler, lease=30)
    job = q.add({"x": 1})
    with running(engine, services=False):
        assert started.wait(20)
        # The hot plane loses the lease (as a flush would): gone in every state.
        wait_until(lambda: engine.hot.take_expired("flushed", now=2**62, limit=10))
        assert engine.hot.present("flushed", [job.id]) == set()
        finish.set()
        wait_until(lambda: engine.durable.get(job_namespace("flushed"), job.id) is None, timeout=20)
    assert calls == [job.id]
    runs = [r.value for r in engine.durable.list(RUNS, name="flushed", limit=10).records]
    assert [r["status"] for r in runs] == ["completed"]
    assert "lease was lost" not in str(runs[0].get("timeline"))
    reconciler = Reconciler(engine)
    assert reconciler.run(["flushed"]) == reconciler.run(["flushed"]) == 0
