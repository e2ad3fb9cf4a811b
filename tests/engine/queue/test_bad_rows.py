"""Issue 18: a job row the leader's services cannot use (written straight to the
durable plane, past ``add``'s checks) is skipped and logged once; it never stops a
pass from restoring, rescuing or releasing the other jobs."""

from __future__ import annotations

import logging
import time

import pytest

from oqronkit import Engine, skipped
from oqronkit.clock import now_ms
from oqronkit.queues.dependencies import sweep_waiting
from oqronkit.services.reconciler import Reconciler
from oqronkit.services.rescuer import rescue_expired


@pytest.fixture(autouse=True)
def fresh_log_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows are logged once per process: each test starts with none logged yet."""
    monkeypatch.setattr(skipped, "_logged", set())


def job_row(job_id: str, **fields) -> dict:
    return {"id": job_id, "queue": "mixed", "data": {}, "status": "waiting", "priority": 0, "attempts": 0,
            "maxAttempts": 3, **fields}


BAD_ROWS = {
    "bad-run-at": job_row("bad-run-at", status="delayed", runAt=10**20),
    "bad-run-at-text": job_row("bad-run-at-text", status="delayed", runAt="tomorrow"),
    "bad-priority": job_row("bad-priority", priority="high"),
    "bad-priority-range": job_row("bad-priority-range", priority=10**30),
    "bad-shape": {"status": "waiting", "what": "no queue, no data"},
}


def skipped_lines(caplog: pytest.LogCaptureFixture, row_id: str) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if getattr(r, "action", "") == "services.row_skipped" and f"/{row_id}," in r.getMessage()]


def test_a_bad_row_does_not_stop_the_reconciler_restoring_the_other_lost_jobs(
    engine: Engine, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.WARNING, logger="oqronkit")
    q = engine.queue("mixed")
    first, later = q.add({"n": 1}), q.add({"n": 2}, delay=600)
    for row_id, value in BAD_ROWS.items():
        engine.durable.put("queue_job:mixed", row_id, value)
    last = q.add({"n": 3})
    good = {first.id, later.id, last.id}
    engine.hot.remove("mixed", sorted(good))  # e.g. a Redis restart
    reconciler = Reconciler(engine)
    assert reconciler.run(["mixed"]) == 0  # missing once
    assert reconciler.run(["mixed"]) == 3
    assert engine.hot.present("mixed", sorted(good | set(BAD_ROWS))) == good
    assert reconciler.run(["mixed"]) == 0 and reconciler.run(["mixed"]) == 0
    for row_id in BAD_ROWS:
        assert len(skipped_lines(caplog, row_id)) == 1, row_id  # logged once, however many passes
    assert "reconciler skipped queue_job:mixed/bad-run-at" in skipped_lines(caplog, "bad-run-at")[0]


def test_a_bad_row_does_not_stop_the_rescuer(engine: Engine, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.WARNING, logger="oqronkit")
    q = engine.queue("mixed")
    good = q.add({"n": 1})
    bad = job_row("bad-backoff", backoff={"type": "fixed", "delayMs": "soon"})
    engine.durable.put("queue_job:mixed", "bad-backoff", bad)
    from oqronkit.backends.hot_types import Signal

    engine.hot.signal("mixed", [Signal("bad-backoff")], now_ms())
    leases = engine.hot.claim("mixed", worker_id="gone", limit=10, lease_ms=1, now=now_ms())
    assert {lease.job_id for lease in leases} == {good.id, "bad-backoff"}
    for lease in leases:  # what the worker wrote behind before it died
        record = engine.durable.get("queue_job:mixed", lease.job_id).value
        engine.durable.put("queue_job:mixed", lease.job_id,
                           {**record, "status": "active", "attempts": 1, "leaseToken": lease.token})
    time.sleep(0.01)  # past the 1 ms leases
    assert rescue_expired(engine, ["mixed"]) == 2
    assert engine.durable.get("queue_job:mixed", good.id).value["status"] == "delayed"  # retried
    assert len(skipped_lines(caplog, "bad-backoff")) == 1


def test_a_bad_row_does_not_stop_the_dependency_sweep(engine: Engine, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.WARNING, logger="oqronkit")
    q = engine.queue("mixed")
    parent = q.add("p", delay=600)
    bad = job_row("bad-pending", status="waiting-dependencies", pendingDependencies=[["only-one-part"]])
    engine.durable.put("queue_job:mixed", "bad-pending", bad)
    child = q.add("c", depends_on=[parent])
    engine.durable.delete("queue_job:mixed", parent.id)  # finished without releasing the child
    engine.hot.remove("mixed", [parent.id])
    assert sweep_waiting(engine.durable, engine.hot, ["mixed"]) == 1
    assert sweep_waiting(engine.durable, engine.hot, ["mixed"]) == 0
    assert engine.durable.get("queue_job:mixed", child.id).value["status"] == "waiting"
    assert engine.hot.present("mixed", [child.id]) == {child.id}
    assert len(skipped_lines(caplog, "bad-pending")) == 1
