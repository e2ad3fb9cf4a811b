"""The rescuer against live holders after an outage: a lease that lapsed while a plane
was away must cost its job at most one stall, and a lease the rescuer took but could
not settle goes back instead of vanishing."""

from __future__ import annotations

import time

import pytest

from oqronkit import BackendUnavailable, Engine
from oqronkit.backends.hot_types import Lease
from oqronkit.clock import now_ms
from oqronkit.durable import RecordWrite
from oqronkit.namespaces import RUNS
from oqronkit.queues.jobs import Job
from oqronkit.queues.runs import finish_run, new_run
from oqronkit.services.rescuer import rescue_expired

LEASE_MS = 150


def lapse() -> None:
    time.sleep(LEASE_MS / 1000 + 0.05)


def test_a_lease_renewed_between_the_rescuers_take_and_signal_counts_one_stall(
        engine: Engine, monkeypatch: pytest.MonkeyPatch):
    """The sequence behind the dead letters after a Postgres restart: every lease lapsed
    during the outage; the rescuer takes one, the holder's heartbeat (back too) finds it
    gone and re-creates it under its token, so the rescuer's signal is a no-op; the holder
    then drops it (its completion could not be confirmed) and it lapses again. That is
    still the one claim: counting a second stall dead-lettered a job that had completed."""
    q = engine.queue("raced", backoff=0.01, max_stalls=2, retries=10)
    job = q.add({})
    [lease] = engine.hot.claim("raced", worker_id="alive", limit=1, lease_ms=LEASE_MS, now=now_ms())
    lapse()
    take = engine.hot.take_expired
    took: list[Lease] = []

    def take_then_renewed(queue: str, *, now: int, limit: int):
        if took:  # one take per pass: on a slow machine the re-created lease can lapse
            return []  # before the pass ends, which is the second half of this test
        took.extend(taken := take(queue, now=now, limit=limit))
        if taken:  # the holder's renewal lands right after the take: re-created, same token
            [renewed] = engine.hot.extend(queue, [lease], lease_ms=LEASE_MS, now=now_ms())
            assert renewed.token == lease.token
        return taken

    monkeypatch.setattr(engine.hot, "take_expired", take_then_renewed)
    assert rescue_expired(engine, ["raced"]) == 1
    monkeypatch.setattr(engine.hot, "take_expired", take)
    stored = engine.durable.get("queue_job:raced", job.id).value
    assert stored["stalls"] == 1 and stored["status"] == "delayed"
    assert engine.hot.present("raced", [job.id]) == {job.id}  # the re-created lease, not the signal

    lapse()  # the holder let it go: it lapses again
    assert rescue_expired(engine, ["raced"]) == 1
    assert engine.durable.get("queue_dlq:raced", job.id) is None
    stored = engine.durable.get("queue_job:raced", job.id).value
    assert stored["stalls"] == 1 and stored["attempts"] == 1
    # Signalled this time: claimable again once due.
    time.sleep(0.05)
    [again] = engine.hot.claim("raced", worker_id="next", limit=1, lease_ms=LEASE_MS, now=now_ms())
    assert again.job_id == job.id and again.token > lease.token


def test_a_second_claim_that_dies_still_counts_its_own_stall(engine: Engine):
    """The fence is per claim: a job that kills every worker that claims it is still
    dead-lettered after max_stalls."""
    q = engine.queue("poison2", backoff=0.01, max_stalls=2, retries=10)
    job = q.add({})
    for _ in range(2):
        time.sleep(0.05)
        [lease] = engine.hot.claim("poison2", worker_id="doomed", limit=1, lease_ms=LEASE_MS, now=now_ms())
        assert lease.job_id == job.id
        lapse()
        assert rescue_expired(engine, ["poison2"]) == 1
    letter = engine.durable.get("queue_dlq:poison2", job.id).value
    assert "stalled 2 times" in letter["deadReason"]


def test_leases_taken_when_the_durable_plane_fails_go_back(engine: Engine, monkeypatch: pytest.MonkeyPatch):
    """A Postgres outage in redis-postgres mode: the rescuer takes lapsed leases from the
    hot plane, then cannot read the jobs. The leases go back under their tokens: the
    live holder keeps renewing its own, and no job is left in neither plane's hands."""
    q = engine.queue("outage", backoff=0.01)
    jobs = q.add_bulk([{"i": i} for i in range(3)])
    leases = engine.hot.claim("outage", worker_id="alive", limit=3, lease_ms=LEASE_MS, now=now_ms())
    assert len(leases) == 3
    lapse()

    def down(*args, **kwargs):
        raise BackendUnavailable("the durable plane is down (test)")

    monkeypatch.setattr(engine.durable, "get", down)
    with pytest.raises(BackendUnavailable):
        rescue_expired(engine, ["outage"])
    monkeypatch.undo()
    assert engine.hot.present("outage", [j.id for j in jobs]) == {j.id for j in jobs}
    # Held under the same tokens: the holder renews them (nothing re-created elsewhere).
    renewed = engine.hot.extend("outage", leases, lease_ms=LEASE_MS, now=now_ms())
    assert {(le.job_id, le.token) for le in renewed} == {(le.job_id, le.token) for le in leases}
    for j in jobs:
        assert engine.durable.get("queue_job:outage", j.id).value["stalls"] == 0


def test_a_completion_landing_while_the_rescuer_closes_its_run_keeps_the_completed_run(
        engine: Engine, monkeypatch: pytest.MonkeyPatch):
    """A Redis Cluster failover: the rescuer took a lapsed lease on the old master, the
    take was lost with it, and the holder confirmed its held completion on the promoted
    replica. Its completed run and the job's deletion land between the rescuer's read of
    the run ("running") and its write: the rescuer's "failed" must not replace them (the
    job would be gone with no completed run)."""
    q = engine.queue("raced_run", backoff=0.01, max_stalls=2, retries=10)
    job = q.add({})
    [lease] = engine.hot.claim("raced_run", worker_id="alive", limit=1, lease_ms=LEASE_MS, now=now_ms())
    run = new_run(name="raced_run", module="queue", trigger="queue", input={}, attempts=1,
                  app=engine.config.project, environment=engine.config.environment, worker_id="alive",
                  job_id=job.id, correlation_id=None, started_at=now_ms())
    stored = Job.from_value(engine.durable.get("queue_job:raced_run", job.id).value)
    stored.status, stored.lease_token, stored.worker_id, stored.run_id = "active", lease.token, "alive", run["id"]
    stored.attempts = 1
    engine.durable.put("queue_job:raced_run", job.id, stored.to_value())
    engine.durable.put(RUNS, run["id"], run)
    lapse()
    get = engine.durable.get

    def completed_after_the_read(namespace: str, id: str):
        found = get(namespace, id)
        if namespace == RUNS and id == run["id"] and found and found.value["status"] == "running":
            done = dict(found.value)
            finish_run(done, "completed", output={"ok": True})  # the holder's settle, in one transaction
            engine.durable.apply(puts=[RecordWrite(RUNS, run["id"], done)], deletes=[("queue_job:raced_run", job.id)])
        return found

    monkeypatch.setattr(engine.durable, "get", completed_after_the_read)
    assert rescue_expired(engine, ["raced_run"]) == 1
    monkeypatch.undo()
    assert engine.durable.get(RUNS, run["id"]).value["status"] == "completed"
    assert engine.durable.get("queue_job:raced_run", job.id) is None
    assert engine.durable.get("queue_dlq:raced_run", job.id) is None


def test_the_rescuer_still_fails_a_run_left_running(engine: Engine):
    """The guard's other side: a run still running when the lease lapsed is closed failed."""
    q = engine.queue("left_running", backoff=0.01, max_stalls=2, retries=10)
    job = q.add({})
    [lease] = engine.hot.claim("left_running", worker_id="gone", limit=1, lease_ms=LEASE_MS, now=now_ms())
    stored = Job.from_value(engine.durable.get("queue_job:left_running", job.id).value)
    stored.status, stored.lease_token, stored.worker_id, stored.run_id = "active", lease.token, "gone", "run-left"
    stored.attempts = 1
    engine.durable.put("queue_job:left_running", job.id, stored.to_value())
    lapse()
    assert rescue_expired(engine, ["left_running"]) == 1  # no run written yet: rebuilt and failed
    run = engine.durable.get(RUNS, "run-left").value
    assert run["status"] == "failed" and run["error"]["type"] == "Stalled" and run["jobId"] == job.id
    assert engine.durable.get("queue_job:left_running", job.id).value["status"] == "delayed"
