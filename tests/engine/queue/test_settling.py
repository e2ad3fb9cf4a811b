"""Settling completed jobs: in steps on every mode, in one transaction in postgres mode,
and what a completion whose lease was lost leaves behind."""

from __future__ import annotations

import threading

import pytest

from oqronkit import Engine
from oqronkit.backends.hot_types import Signal
from oqronkit.clock import now_ms
from oqronkit.errors import BackendUnavailable

from .conftest import built_engine, running, wait_until
from .test_processing import runs_of


def test_only_postgres_mode_settles_in_one_transaction(engine: Engine, mode: str):
    assert engine.settles_in_one_transaction is (mode == "postgres")


def test_a_completion_after_the_lease_was_lost_leaves_the_job_to_its_new_holder(engine: Engine):
    release, started = threading.Event(), threading.Event()

    def work(ctx):
        started.set()
        release.wait(10)

    q = engine.queue("taken", handler=work, concurrency=1, prefetch=0)
    job = q.add({"n": 1})
    with running(engine) as process:
        assert started.wait(10)
        # What a rescuer and another worker would do after this worker's lease lapsed.
        [expired] = engine.hot.take_expired("taken", now=now_ms() + 10**9, limit=10)
        assert expired.job_id == job.id
        engine.hot.signal("taken", [Signal(job.id, 0, None, False)], now_ms())
        [other] = engine.hot.claim("taken", worker_id="someone-else", limit=1, lease_ms=60_000, now=now_ms())
        release.set()
        wait_until(lambda: runs_of(engine, job.id) and runs_of(engine, job.id)[0]["status"] == "completed")
        wait_until(lambda: process.stats_snapshot().get("completed") == 1)
    [run] = runs_of(engine, job.id)
    assert run["timeline"][-1]["reason"] == "completed after its lease was lost"
    assert engine.durable.get("queue_job:taken", job.id) is not None  # still the new holder's
    assert engine.hot.extend("taken", [other], lease_ms=60_000, now=now_ms()) != []  # its lease untouched


@pytest.fixture
def pg_engine(request, tmp_path, scope_names):
    with built_engine("postgres", request, tmp_path, scope_names[0]) as eng:
        yield eng


def test_postgres_mode_settles_completions_without_separate_lease_calls(pg_engine: Engine, monkeypatch):
    calls: list[str] = []
    for name in ("extend", "ack"):
        real = getattr(pg_engine.hot, name)

        def counted(*args, _real=real, _name=name, **kwargs):
            calls.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(pg_engine.hot, name, counted)
    q = pg_engine.queue("once", handler=lambda ctx: {"ok": ctx.data["n"]})
    jobs = q.add_bulk([{"n": n} for n in range(20)])
    with running(pg_engine):
        wait_until(lambda: pg_engine.durable.count("queue_job:once") == 0)
    assert "ack" not in calls  # released in the transaction that deleted the jobs
    assert q.counts()["active"] == 0
    for job in jobs:
        [run] = runs_of(pg_engine, job.id)
        assert run["status"] == "completed" and run["output"] == {"ok": job.data["n"]}


def test_postgres_mode_settles_in_steps_when_the_one_transaction_fails(pg_engine: Engine, monkeypatch):
    failures = []

    def down(**_):
        failures.append(1)
        raise BackendUnavailable("PostgreSQL went away (simulated)")

    monkeypatch.setattr(pg_engine.durable, "apply_and_release", down)
    q = pg_engine.queue("steps", handler=lambda ctx: None)
    jobs = q.add_bulk([{"n": n} for n in range(5)])
    with running(pg_engine):
        wait_until(lambda: pg_engine.durable.count("queue_job:steps") == 0)
    assert failures
    assert q.counts() == {"waiting": 0, "delayed": 0, "active": 0, "dead": 0}
    assert all(runs_of(pg_engine, job.id)[0]["status"] == "completed" for job in jobs)


def test_apply_and_release_is_atomic_and_releases_only_leases_still_held(pg_engine: Engine):
    from oqronkit.durable import RecordWrite
    from oqronkit.errors import InvalidRecord

    q = pg_engine.queue("atomic")
    a, b = q.add({"n": 1}), q.add({"n": 2})
    leases = {le.job_id: le for le in pg_engine.hot.claim("atomic", worker_id="w", limit=2, lease_ms=60_000,
                                                         now=now_ms())}
    durable = pg_engine.durable
    bad_run = RecordWrite("runs", "r-bad", {"id": "r-bad", "startedAt": "not a number"}, new=True)
    with pytest.raises(InvalidRecord):
        durable.apply_and_release(puts=[bad_run], namespace="queue_job:atomic", queue="atomic",
                                  leases=[(a.id, leases[a.id].token)])
    assert durable.get("queue_job:atomic", a.id) is not None  # nothing released, nothing deleted
    assert pg_engine.hot.present("atomic", [a.id]) == {a.id}

    good_run = RecordWrite("runs", "r-good", {"id": "r-good", "jobId": a.id, "startedAt": now_ms()}, new=True)
    released = durable.apply_and_release(
        puts=[good_run], namespace="queue_job:atomic", queue="atomic",
        leases=[(a.id, leases[a.id].token), (b.id, leases[b.id].token + 1000)])  # b: a token not held
    assert released == {a.id}
    assert durable.get("queue_job:atomic", a.id) is None and durable.get("runs", "r-good") is not None
    assert durable.get("queue_job:atomic", b.id) is not None
    assert pg_engine.hot.present("atomic", [a.id, b.id]) == {b.id}
