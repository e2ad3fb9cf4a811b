"""An outage of either plane never costs a live holder's job a stall and never reruns a
completed job: a completion whose lease could not be confirmed is held and confirmed
later; a claim whose jobs could not be read keeps its leases and reads again; and the
rescuer leaves lapsed leases alone for a lease period after an outage, while live
holders' heartbeats renew them. Faults are injected by wrapping the planes' facade
methods, on every mode."""

from __future__ import annotations

import threading
import time

import pytest

from oqronkit import BackendUnavailable, Engine
from oqronkit.clock import now_ms
from oqronkit.services import Services
from oqronkit.services import leader as leader_module

from .conftest import running, wait_until
from .test_processing import runs_of


class Outage:
    """Facade methods that raise BackendUnavailable while ``down`` is set."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *targets: tuple[object, str]) -> None:
        self.down = threading.Event()
        self.calls = 0
        for obj, name in targets:
            real = getattr(obj, name)

            def call(*args, _real=real, **kwargs):
                if self.down.is_set():
                    self.calls += 1
                    raise BackendUnavailable("plane down (test)")
                return _real(*args, **kwargs)

            monkeypatch.setattr(obj, name, call)


def test_a_completion_whose_lease_could_not_be_confirmed_is_held_not_lost(
        engine: Engine, monkeypatch: pytest.MonkeyPatch):
    """The hot plane did not answer the finisher's ownership check: that is no "not
    yours". Treated as lost, the job's row stayed, its lease lapsed and it ran again."""
    # In postgres mode the one-transaction settle meets the same outage first.
    outage = Outage(monkeypatch, (engine.hot, "extend"), (engine.durable, "apply_and_release"))
    ran: list[int] = []
    q = engine.queue("held", handler=lambda ctx: ran.append(ctx.attempt) or {"ok": True}, lease=2.0)
    with running(engine, services=False) as process:
        outage.down.set()
        job = q.add({})
        wait_until(lambda: ran and outage.calls > 0)
        time.sleep(0.6)  # a flush or two meet the outage too
        assert engine.durable.get("queue_job:held", job.id) is not None
        assert process.finisher.unrecorded() == 1
        outage.down.clear()
        wait_until(lambda: engine.durable.get("queue_job:held", job.id) is None)
        wait_until(lambda: process.stats_snapshot().get("completed") == 1)
    [run] = runs_of(engine, job.id)
    assert run["status"] == "completed" and run["timeline"][-1]["reason"] == "completed"
    assert ran == [1] and engine.hot.present("held", [job.id]) == set()


def test_a_claim_whose_jobs_could_not_be_read_keeps_its_leases_and_starts_them_later(
        engine: Engine, monkeypatch: pytest.MonkeyPatch):
    """The durable read after a claim failed ('could not start N job(s)'): the leases
    were left to lapse, and the rescuer counted a stall for each of those jobs (and the
    worker claimed the next batch a second later, to let it lapse too)."""
    if engine.config.mode in ("redis", "postgres"):
        pytest.skip(f"{engine.config.mode} mode reads the rows in the claim's own call (claim_and_read): "
                    "no read to fail")
    ran: list[int] = []
    q = engine.queue("unread", handler=lambda ctx: ran.append(ctx.attempt), lease=0.6, prefetch=1)
    jobs = q.add_bulk([{"n": n} for n in range(3)])
    with running(engine, services=False) as process:
        outage = Outage(monkeypatch, (engine.durable, "get_many"))
        outage.down.set()
        wait_until(lambda: outage.calls >= 3)  # the first read and two retries met the outage
        time.sleep(1.0)  # longer than the lease: only renewals keep it
        outage.down.clear()
        wait_until(lambda: process.stats_snapshot().get("completed") == 3)
    # Each ran once, on its first attempt: no lease lapsed, so no stall could be counted.
    assert sorted(ran) == [1, 1, 1]
    assert all(engine.durable.get("queue_job:unread", j.id) is None for j in jobs)
    assert engine.hot.take_expired("unread", now=now_ms() + 10**9, limit=10) == []


GRACE_MS = 1500


def leader_through_an_outage(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> Services:
    """A leader whose services tick met an outage of the hot plane, then answered again."""
    monkeypatch.setattr(leader_module, "OUTAGE_GRACE_FLOOR_MS", GRACE_MS)
    services = Services(engine, worker_id="leader", rescue_every=0.0, reconcile_every=0.0)
    with monkeypatch.context() as m:
        outage = Outage(m, (engine.hot, "acquire_lock"))
        outage.down.set()
        services.step()
        assert outage.calls == 1
        # A call waits up to BACKEND_WAIT for the plane: its failure can come long before
        # the plane answers again, so the grace runs from that answer.
        time.sleep(GRACE_MS / 1000)
    return services


def test_the_rescuer_leaves_lapsed_leases_to_recovering_heartbeats_for_a_lease_period(
        engine: Engine, monkeypatch: pytest.MonkeyPatch):
    """Right after an outage, every lease had lapsed; the rescuer took a live holder's
    before the holder's heartbeat renewed it, and counted a stall (rerunning the job, or
    dead-lettering it past max_stalls). Now a lease period passes first: the live holder
    renews its lease meanwhile; a dead holder's job is rescued after it as before."""
    q = engine.queue("graced", lease=0.2, backoff=0.01, max_stalls=1)
    alive, dead = q.add({"holder": "alive"}), q.add({"holder": "dead"})
    leases = {le.job_id: le for le in engine.hot.claim("graced", worker_id="w", limit=2, lease_ms=200,
                                                       now=now_ms())}
    services = leader_through_an_outage(engine, monkeypatch)
    time.sleep(0.3)  # both leases lapsed during the outage
    services.step()  # back: leader again, rescue and reconcile due
    assert services.is_leader
    for job in (alive, dead):
        stored = engine.durable.get("queue_job:graced", job.id).value
        assert stored["stalls"] == 0 and stored["status"] == "waiting"
    # The live holder's heartbeat, back too, renews its lease under its token.
    [renewed] = engine.hot.extend("graced", [leases[alive.id]], lease_ms=60_000, now=now_ms())
    assert renewed.token == leases[alive.id].token
    wait_until(lambda: (services.step(), engine.durable.get("queue_dlq:graced", dead.id))[1], timeout=5)
    assert engine.durable.get("queue_job:graced", alive.id).value["stalls"] == 0
    assert engine.hot.extend("graced", [renewed], lease_ms=60_000, now=now_ms()) != []  # still the holder's
    services.resign()


def test_the_reconciler_counts_no_stall_for_a_missing_lease_until_a_lease_period_after_an_outage(
        engine: Engine, monkeypatch: pytest.MonkeyPatch):
    """A hot plane restarted without its data: an active job's lease is missing until its
    holder's heartbeat re-creates it (every lease/3, up to 10 s); two reconciler passes
    5 s apart could both come first."""
    q = engine.queue("wiped", lease=0.2, backoff=0.01)
    job = q.add({})
    [lease] = engine.hot.claim("wiped", worker_id="w", limit=1, lease_ms=200, now=now_ms())
    value = engine.durable.get("queue_job:wiped", job.id).value
    engine.durable.put("queue_job:wiped", job.id, {**value, "status": "active", "leaseToken": lease.token,
                                                   "workerId": "w", "attempts": 1})
    engine.hot.ack("wiped", [lease])  # what the restart lost
    services = leader_through_an_outage(engine, monkeypatch)
    for _ in range(3):
        services.step()
        services.run("reconcile")
    assert engine.durable.get("queue_job:wiped", job.id).value["stalls"] == 0
    time.sleep(GRACE_MS / 1000)
    services.run("reconcile")  # missing on the passes before and after the grace: stalled
    assert engine.durable.get("queue_job:wiped", job.id).value["stalls"] == 1
    services.resign()


def test_a_failure_settled_during_a_durable_outage_is_held_and_its_lease_renewed(
        engine: Engine, monkeypatch: pytest.MonkeyPatch):
    """The durable plane did not answer while a failure was settled: the finisher dropped
    the outcome and the lease lapsed, so the rescuer counted a stall against a job whose
    worker was alive (and its retry came from the rescuer, not the backoff)."""
    ran: list[int] = []

    def fail(ctx):
        ran.append(ctx.attempt)
        raise RuntimeError("boom")

    q = engine.queue("flaky", handler=fail, lease=0.6, retries=1, backoff=0.01, max_stalls=1)
    durable = engine.durable
    outage = Outage(monkeypatch, *[(durable, name) for name in ("apply", "compare_and_set", "apply_and_release")])
    services = Services(engine, worker_id="leader", rescue_every=0.0, reconcile_every=0.0)
    with running(engine, services=False) as process:
        outage.down.set()
        job = q.add({})
        wait_until(lambda: ran and outage.calls > 0)
        time.sleep(1.5)  # well past the lease: only renewals keep it
        assert process.finisher.unrecorded() == 1
        assert engine.hot.take_expired("flaky", now=now_ms(), limit=10) == []
        outage.down.clear()
        # The leader rescues as it would after the outage; the held failure settles first.
        wait_until(lambda: (services.step(), engine.durable.get("queue_dlq:flaky", job.id))[1])
        wait_until(lambda: process.finisher.unrecorded() == 0)
    dead = engine.durable.get("queue_dlq:flaky", job.id).value
    assert dead["stalls"] == 0 and dead["attempts"] == 2
    assert ran == [1, 2] and process.stats_snapshot().get("retried") == 1
    assert [run["status"] for run in runs_of(engine, job.id)] == ["failed", "failed"]
    services.resign()


def test_a_stop_during_a_durable_outage_counts_a_held_failure_as_unrecorded(
        engine: Engine, monkeypatch: pytest.MonkeyPatch):
    """Like a held completion, a held failure is not recorded: the stop says so and
    exits 1 (a dropped one counted nothing and the worker exited 0)."""
    ran: list[int] = []

    def fail(ctx):
        ran.append(ctx.attempt)
        raise RuntimeError("boom")

    q = engine.queue("stopped", handler=fail, lease=5.0, retries=3)
    outage = Outage(monkeypatch, *[(engine.durable, name) for name in ("apply", "compare_and_set",
                                                                          "apply_and_release")])
    with running(engine, services=False, drain_timeout=0.5) as process:
        outage.down.set()
        q.add({})
        wait_until(lambda: ran and process.finisher.unrecorded() == 1)
    assert process.exit_code == 1 and process.stats_snapshot().get("unrecorded") == 1
    assert ran == [1] and not process.stats_snapshot().get("retried")
