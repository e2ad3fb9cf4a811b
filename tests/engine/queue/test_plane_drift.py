"""Plane drift (services/drift.py): each kind of disagreement between the planes is
found, bounded by the sample, and the operator's reconciler repairs what it should and
records its pass (services/passes.py, services/manual.py). Every mode with both planes."""

from __future__ import annotations

from oqronkit import Engine
from oqronkit.backends.hot_types import Signal
from oqronkit.clock import now_ms
from oqronkit.namespaces import QUEUE, job_namespace
from oqronkit.services import Services
from oqronkit.services.drift import plane_drift
from oqronkit.services.manual import reconcile_now
from oqronkit.services.passes import kept_passes, last_passes


def queue_drift(engine: Engine, queue: str, **options):
    [found] = plane_drift(engine, [queue], grace_ms=0, **options).queues
    return found


def age(engine: Engine, queue: str, job_id: str, **fields) -> None:
    """Rewrite a stored job as if it changed long ago (past the grace), with ``fields``."""
    record = engine.durable.get(job_namespace(queue), job_id)
    assert record is not None
    engine.durable.put(job_namespace(queue), job_id, {**record.value, "updatedAt": now_ms() - 60_000, **fields})


def test_planes_that_agree_show_no_drift(engine: Engine):
    q = engine.queue("calm")
    q.add({"x": 1})
    q.add({"x": 2}, delay=600)
    drift = queue_drift(engine, "calm")
    assert drift.clean and drift.complete and drift.sampled == 2
    assert (drift.ready, drift.delayed, drift.leased) == (1, 1, 0)
    report = plane_drift(engine, ["calm"])
    assert report.clean and report.to_json()["queues"][0]["clean"] is True


def test_jobs_the_hot_plane_lost_and_entries_it_invented_are_named(engine: Engine):
    q = engine.queue("lost")
    waiting, delayed, kept = q.add({"x": 1}), q.add({"x": 2}, delay=600), q.add({"x": 3})
    for job in (waiting, delayed, kept):
        age(engine, "lost", job.id)
    engine.hot.remove("lost", [waiting.id, delayed.id])  # e.g. a Redis flush
    engine.hot.signal("lost", [Signal("ghost")], now_ms())  # no durable job
    drift = queue_drift(engine, "lost")
    assert drift.unsignalled.count == 2 and set(drift.unsignalled.ids) == {waiting.id, delayed.id}
    assert drift.orphans.count == 1 and drift.orphans.ids == ["ghost"]
    assert not drift.clean
    # Within the grace a job just stored is not drift yet.
    [fresh] = plane_drift(engine, ["lost"], grace_ms=600_000).queues
    assert fresh.unsignalled.count == 0


def test_lapsed_and_lapsing_leases_and_workerless_attempts_are_named(engine: Engine):
    q = engine.queue("leases", lease=30)
    lapsed, lapsing, healthy = q.add({"x": 1}), q.add({"x": 2}), q.add({"x": 3})
    now = now_ms()
    engine.hot.claim("leases", worker_id="w", limit=1, lease_ms=1, now=now - 10)  # lapsed
    engine.hot.claim("leases", worker_id="w", limit=1, lease_ms=2_000, now=now)  # within the 10 s heartbeat
    engine.hot.claim("leases", worker_id="w", limit=1, lease_ms=30_000, now=now)
    age(engine, "leases", lapsed.id, status="active", workerId="gone-worker", leaseToken=1)
    drift = queue_drift(engine, "leases")
    assert drift.heartbeat_ms == 10_000
    assert drift.lapsed.ids == [lapsed.id] and drift.lapsing.ids == [lapsing.id]
    assert drift.workerless.ids == [lapsed.id]
    assert healthy.id not in drift.lapsed.ids + drift.lapsing.ids
    assert drift.unsignalled.count == drift.leaseless.count == drift.orphans.count == 0


def test_an_active_job_without_its_lease_is_named(engine: Engine):
    q = engine.queue("leaseless")
    job = q.add({"x": 1})
    engine.hot.remove("leaseless", [job.id])
    age(engine, "leaseless", job.id, status="active", workerId="w1", leaseToken=7)
    drift = queue_drift(engine, "leaseless")
    assert drift.leaseless.ids == [job.id] and drift.unsignalled.count == 0


def test_the_comparison_is_bounded_by_its_sample(engine: Engine):
    q = engine.queue("big")
    for i in range(30):
        q.add({"i": i})
    drift = queue_drift(engine, "big", sample=5)
    assert drift.sampled == 5 and not drift.complete
    assert drift.ready == 30  # the depths are exact counts


def test_reconcile_now_signals_lost_jobs_and_records_who_asked(engine: Engine):
    q = engine.queue("repair")
    jobs = [q.add({"i": i}) for i in range(3)]
    engine.hot.remove("repair", [j.id for j in jobs])
    done = reconcile_now(engine, by="board:alice", gap_s=0.05)
    assert done.repaired == {"signalled": 3} and done.manual and done.by == "board:alice"
    assert {j["job"] for j in done.jobs} == {j.id for j in jobs}
    assert engine.hot.present("repair", [j.id for j in jobs]) == {j.id for j in jobs}
    assert queue_drift(engine, "repair").clean
    [kept] = kept_passes(engine)
    assert kept.by == "board:alice" and kept.repaired == {"signalled": 3}
    assert last_passes(engine)["reconcile"] is not None
    # Nothing to repair the second time, no duplicate signal.
    assert reconcile_now(engine, by="cli:bob", gap_s=0.05).total == 0
    assert engine.hot.depths("repair", now_ms()).ready == 3


def test_the_operators_reconciler_never_stalls_an_active_job(engine: Engine):
    q = engine.queue("busy")
    job = q.add({"x": 1})
    engine.hot.claim("busy", worker_id="w", limit=1, lease_ms=30_000, now=now_ms())
    engine.hot.remove("busy", [job.id])
    age(engine, "busy", job.id, status="active", workerId="w", leaseToken=1)
    engine.hot.ack("busy", [lease for lease in engine.hot.sample("busy", limit=5).leases])
    assert reconcile_now(engine, by="t", gap_s=0.01).total == 0
    record = engine.durable.get(job_namespace("busy"), job.id)
    assert record is not None and record.value["status"] == "active" and record.value.get("stalls", 0) == 0


def test_the_leaders_passes_are_recorded(engine: Engine):
    q = engine.queue("led", lease=30)
    job = q.add({"x": 1})
    engine.hot.claim("led", worker_id="w", limit=1, lease_ms=1, now=now_ms() - 10)
    services = Services(engine, worker_id="leader-1")
    services.run("rescue")
    services.run("reconcile")
    last = last_passes(engine)
    assert last["rescue"] is not None and last["rescue"].by == "leader-1"
    assert last["rescue"].repaired == {"rescued": 1} and last["rescue"].jobs[0]["job"] == job.id
    assert last["reconcile"] is not None and last["reconcile"].checked >= 1
    assert [p.service for p in kept_passes(engine)] == ["rescue"]  # only passes that repaired are kept


def test_a_failed_pass_is_kept_with_its_error_and_an_outage_writes_none(engine: Engine, monkeypatch):
    from oqronkit.errors import BackendUnavailable

    engine.queue("broken")
    services = Services(engine, worker_id="leader-2")

    def bug(*args, **kwargs):
        raise RuntimeError("a bug in the rescuer")

    monkeypatch.setattr(engine.hot.plane, "take_expired", bug)
    services.run("rescue")  # logged, never raised: the leader loop goes on
    [kept] = kept_passes(engine)
    assert kept.service == "rescue" and kept.error == "RuntimeError: a bug in the rescuer"

    def down(*args, **kwargs):
        raise BackendUnavailable("the hot plane is down")

    monkeypatch.setattr(engine.hot.plane, "take_expired", down)
    services.run("rescue")
    assert len(kept_passes(engine)) == 1


def test_a_job_finishing_between_the_reads_is_not_drift(engine: Engine, monkeypatch):
    """A worker acks the hot plane, then deletes the durable job: finishing right after the
    comparison's second presence check, the job looked leaseless twice; the last read sees
    it gone."""
    q = engine.queue("finishing")
    job = q.add({"x": 1})
    engine.hot.remove("finishing", [job.id])
    age(engine, "finishing", job.id, status="active", workerId="w1", leaseToken=3)
    plane = engine.hot.plane
    real_present, calls = plane.present, []

    def present(*args, **kwargs):
        found = real_present(*args, **kwargs)
        calls.append(1)
        if len(calls) == 2:  # the job's worker deletes it now
            engine.durable.delete(job_namespace("finishing"), job.id)
        return found

    monkeypatch.setattr(plane, "present", present)
    drift = queue_drift(engine, "finishing")
    assert len(calls) >= 2 and drift.clean


def spy(monkeypatch, target, name: str) -> list[tuple]:
    calls: list[tuple] = []
    real = getattr(target, name)

    def recorded(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(target, name, recorded)
    return calls


def test_agreeing_planes_cost_one_narrow_durable_read_and_no_presence_check(engine: Engine, monkeypatch):
    """The hot sample (read after the durable scan) already shows the durable ids present,
    and the stored jobs are read once for the few fields compared, never whole."""
    q = engine.queue("agreeing")
    jobs = [q.add({"x": i, "blob": "y" * 200}) for i in range(5)]
    engine.hot.claim("agreeing", worker_id="w", limit=1, lease_ms=30_000, now=now_ms())
    age(engine, "agreeing", jobs[0].id, status="active", workerId="w", leaseToken=1)
    present = spy(monkeypatch, engine.hot.plane, "present")
    whole = spy(monkeypatch, engine.durable, "get_many")
    narrow = spy(monkeypatch, engine.durable.store, "get_fields")
    report = plane_drift(engine, ["agreeing"], grace_ms=0)
    assert present == [] and narrow and all(call[-1] == ("status", "updatedAt", "workerId") for call in narrow)
    assert [call for call in whole if call[0].startswith("queue_job:")] == []  # no job read whole
    [drift] = report.queues
    assert drift.sampled == 5 and drift.workerless.ids == [jobs[0].id]  # "w" is no live worker
    assert report.calls == 6 + 4  # scan, sample, one read, the re-read of the workerless job


def test_an_invented_entry_that_goes_before_the_recheck_is_not_drift(engine: Engine, monkeypatch):
    """A completion deletes the durable job, then drops the hot entry: an entry found
    without its job is looked at once more on the hot plane, and gone there it is no orphan."""
    q = engine.queue("invented")
    q.add({"x": 1})
    engine.hot.signal("invented", [Signal("ghost"), Signal("stays")], now_ms())
    store = engine.durable.store
    real = store.get_fields

    def read_then_finish(*args, **kwargs):
        found = real(*args, **kwargs)
        engine.hot.remove("invented", ["ghost"])  # its worker finishes right after the read
        return found

    monkeypatch.setattr(store, "get_fields", read_then_finish)
    drift = queue_drift(engine, "invented")
    assert drift.orphans.ids == ["stays"] and drift.unsignalled.count == 0


def test_every_queue_by_default_with_the_lease_its_workers_recorded_read_once(engine: Engine, monkeypatch):
    """Called without queues, the report names the declared queues and those only a
    worker recorded, whose heartbeat comes from the recorded lease: the queue records
    are listed once, not listed then read again."""
    engine.queue("declared")
    engine.durable.put(QUEUE, "recorded-only", {"leaseMs": 3_000})
    reads = spy(monkeypatch, engine.durable, "get_many")
    report = plane_drift(engine)
    heartbeats = {q.queue: q.heartbeat_ms for q in report.queues}
    assert {"declared", "recorded-only"} <= set(heartbeats) and heartbeats["recorded-only"] == 1_000
    assert [call for call in reads if call[0] == QUEUE] == []
