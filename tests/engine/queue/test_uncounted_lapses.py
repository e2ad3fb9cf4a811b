"""Which lapsed leases charge an attempt (issue 39, item 2; README "What is guaranteed"):
only one whose handler may have run. A lease that lapses on a live worker (in the
worker registry) with no attempt recorded as started returns its job uncounted; a dead
worker's lease (its runs are written behind, so a start may not show yet), or an
attempt recorded as active, counts a stall as before. Every mode."""

from __future__ import annotations

import time

import pytest

from oqronkit import Engine
from oqronkit.clock import now_ms
from oqronkit.live import forget_worker, publish_worker
from oqronkit.services.rescuer import rescue_expired

from .conftest import running, wait_until


def _claim(engine: Engine, queue: str, worker: str) -> None:
    [_lease] = engine.hot.claim(queue, worker_id=worker, limit=1, lease_ms=100, now=now_ms())
    time.sleep(0.2)


def test_a_lease_lapsed_on_a_live_worker_before_its_attempt_was_recorded_costs_no_attempt(engine: Engine):
    """Before: counted as a stall, and with retries=0 dead-lettered although no handler
    ever ran (the worker never heard of the claim: its reply was lost)."""
    q = engine.queue("unheard", retries=0, backoff=0.01)
    job = q.add({})
    publish_worker(engine.hot, {"id": "alive", "heartbeatAt": now_ms()})
    _claim(engine, "unheard", "alive")
    assert rescue_expired(engine, ["unheard"]) == 1
    stored = engine.durable.get("queue_job:unheard", job.id).value
    assert stored["status"] == "waiting" and stored["attempts"] == 0 and stored["stalls"] == 0
    assert engine.durable.get("queue_dlq:unheard", job.id) is None
    seen: list[int] = []
    q.handler(lambda ctx: seen.append(ctx.attempt))
    with running(engine, services=False):
        wait_until(lambda: seen == [1])


def test_a_dead_workers_lease_still_counts_an_attempt(engine: Engine):
    q = engine.queue("gone", retries=0, backoff=0.01)
    job = q.add({})
    publish_worker(engine.hot, {"id": "was-alive", "heartbeatAt": now_ms()})
    forget_worker(engine.hot, "was-alive")  # stopped (or its entry lapsed)
    _claim(engine, "gone", "was-alive")
    assert rescue_expired(engine, ["gone"]) == 1
    letter = engine.durable.get("queue_dlq:gone", job.id).value
    assert "attempts exhausted (1 of 1)" in letter["deadReason"]


def test_a_live_workers_recorded_attempt_still_counts(engine: Engine):
    """A handler that ran past 0.5 s (its active state written) may have done its work."""
    from oqronkit.durable import RecordWrite
    from oqronkit.queues.jobs import Job

    q = engine.queue("started", retries=1, backoff=0.01)
    job = q.add({})
    publish_worker(engine.hot, {"id": "stuck", "heartbeatAt": now_ms()})
    [lease] = engine.hot.claim("started", worker_id="stuck", limit=1, lease_ms=100, now=now_ms())
    stored = Job.from_value(engine.durable.get("queue_job:started", job.id).value)
    stored.attempts, stored.status, stored.lease_token, stored.worker_id = 1, "active", lease.token, "stuck"
    engine.durable.put_many([RecordWrite(stored.namespace, stored.id, stored.to_value())])
    time.sleep(0.2)
    assert rescue_expired(engine, ["started"]) == 1
    value = engine.durable.get("queue_job:started", job.id).value
    assert value["status"] == "delayed" and value["attempts"] == 1 and value["stalls"] == 1


def test_a_completion_held_by_an_outage_is_never_taken_back_as_unknown(
        monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, tmp_path, scope_names):
    """A completion whose ownership check met an outage is held, and confirmed later. While
    that confirmation was in flight its lease was listed nowhere, so a worker asking what
    it holds (after a claim with no reply) took it for unknown and ran the job again."""
    from oqronkit import BackendUnavailable

    from .conftest import built_engine

    with built_engine("memory", request, tmp_path, scope_names[0]) as engine:
        ran: list[int] = []
        q = engine.queue("held", handler=lambda ctx: ran.append(ctx.attempt))
        real_extend, down, process_box = engine.hot.extend, [True], []

        def extend(queue, leases, **kwargs):
            if down[0]:
                raise BackendUnavailable("hot plane down (test)")
            process_box[0].state.unsure.mark("held")  # the worker looks while this call is in flight
            time.sleep(0.4)
            return real_extend(queue, leases, **kwargs)

        monkeypatch.setattr(engine.hot, "extend", extend)
        with running(engine, services=False) as process:
            process_box.append(process)
            job = q.add({})
            wait_until(lambda: process.finisher.unrecorded() == 1)
            down[0] = False
            wait_until(lambda: engine.durable.get("queue_job:held", job.id) is None)
            time.sleep(0.6)
        assert ran == [1]
