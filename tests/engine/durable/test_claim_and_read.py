"""The durable stores' ``claim_and_read`` (the worker's claim with its jobs' rows, one
round trip: claim_and_read.lua in redis mode, the hot plane's claim joined to oqron_jobs
in postgres mode) is ``HotPlane.claim`` followed by ``get_many``: the same leases (claim
order, consecutive tokens after the hot plane's own, due delayed jobs promoted), the
same rows, a lease without a record for a job whose row is gone, disjoint jobs for
concurrent claimers, and leases the hot plane's rescuer and ``leases_of`` see, so a
worker that dies holding them is rescued as after a plain claim."""

from __future__ import annotations

import json
import threading
from typing import Any

import psycopg
import pytest

from oqronkit.backends.hot_types import Signal
from oqronkit.backends.postgres import heads
from oqronkit.backends.protocols import ClaimingStore
from oqronkit.backends.types import EncodedRow, Scope
from oqronkit.errors import BackendUnavailable
from tests.services import drop_redis_project, require_redis

NOW = 1_700_000_000_000
LEASE = 30_000
NAMESPACE = "queue_job:mail"


def opened(mode: str, request: pytest.FixtureRequest, scope_names: tuple[str, str]) -> tuple[Any, Any, Scope]:
    """The store and the hot plane of ``mode``, whose planes share a server."""
    if mode == "redis":
        from oqronkit.backends.redis import RedisDurableStore, RedisHotPlane

        url = require_redis()
        request.addfinalizer(lambda: drop_redis_project(url, scope_names[0]))
        store, hot = RedisDurableStore(url), RedisHotPlane(url)
    else:
        from oqronkit.backends.postgres import PostgresDurableStore, PostgresHotPlane

        url = request.getfixturevalue("pg_schema_url")
        store, hot = PostgresDurableStore(url), PostgresHotPlane(url)
    request.addfinalizer(hot.close)
    request.addfinalizer(store.close)
    store.ensure_schema()
    hot.ensure_ready()
    return store, hot, Scope(*scope_names)


@pytest.fixture(params=["redis", "postgres"])
def planes(request: pytest.FixtureRequest, scope_names) -> tuple[Any, Any, Scope]:
    return opened(request.param, request, scope_names)


@pytest.fixture
def pg_planes(request: pytest.FixtureRequest, scope_names) -> tuple[Any, Any, Scope]:
    return opened("postgres", request, scope_names)


def add(store: Any, hot: Any, scope: Scope, *signals: Signal) -> None:
    rows = [EncodedRow(NAMESPACE, s.job_id, "job", "jobs", json.dumps({"id": s.job_id, "n": i}), NOW, None)
            for i, s in enumerate(signals)]
    store.put_many(scope, rows)
    hot.signal(scope, "mail", list(signals), NOW)


def claim_and_read(store: Any, scope: Scope, limit: int, now: int = NOW, worker: str = "w1"):
    return store.claim_and_read(scope, "mail", "jobs", NAMESPACE, worker_id=worker, limit=limit, lease_ms=LEASE,
                                now=now)


def test_it_claims_in_claim_order_and_returns_the_rows(planes) -> None:
    store, hot, scope = planes
    assert isinstance(store, ClaimingStore)
    add(store, hot, scope, Signal("low"), Signal("high", priority=5), Signal("later", run_at=NOW + 1000))
    [first] = hot.claim(scope, "mail", worker_id="w0", limit=1, lease_ms=LEASE, now=NOW)  # the hot plane's own
    assert first.job_id == "high"
    leases, records = claim_and_read(store, scope, 10, now=NOW + 1000)  # "later" is due now: promoted
    assert [le.job_id for le in leases] == ["low", "later"]
    assert [le.token for le in leases] == [first.token + 1, first.token + 2]  # one token sequence, consecutive
    assert {le.expires_at for le in leases} == {NOW + 1000 + LEASE}
    assert [(r.id, r.value) for r in records] == [("low", {"id": "low", "n": 0}), ("later", {"id": "later", "n": 2})]
    read = store.get_many(scope, "jobs", NAMESPACE, ["low", "later"])  # in no particular order
    assert {r.id: r for r in records} == {r.id: r for r in read}
    assert claim_and_read(store, scope, 10, now=NOW + 1000) == ([], [])  # nothing left ready
    assert hot.leases_of(scope, "mail", "w1") == leases


def test_a_job_whose_row_is_gone_has_a_lease_and_no_record(planes) -> None:
    store, hot, scope = planes
    add(store, hot, scope, Signal("kept"), Signal("deleted"))
    store.delete_many(scope, "jobs", NAMESPACE, ["deleted"])
    leases, records = claim_and_read(store, scope, 10)
    assert [le.job_id for le in leases] == ["kept", "deleted"]  # the worker acks the gone one
    assert [r.id for r in records] == ["kept"]


def test_a_row_of_another_namespace_or_scope_is_not_read(planes) -> None:
    store, hot, scope = planes
    add(store, hot, scope, Signal("a"))
    store.delete_many(scope, "jobs", NAMESPACE, ["a"])
    other = EncodedRow("queue_job:other", "a", "job", "jobs", json.dumps({"id": "a"}), NOW, None)
    store.put_many(scope, [other])
    store.put_many(Scope(scope.project, scope.environment + "-x"), [other._replace(namespace=NAMESPACE)])
    leases, records = claim_and_read(store, scope, 10)
    assert [le.job_id for le in leases] == ["a"] and records == []


def test_the_limit_bounds_the_claim(planes) -> None:
    store, hot, scope = planes
    add(store, hot, scope, *(Signal(f"j{i}") for i in range(5)))
    assert claim_and_read(store, scope, 0) == ([], [])
    assert hot.depths(scope, "mail", NOW).ready == 5
    leases, records = claim_and_read(store, scope, 2)
    assert [le.job_id for le in leases] == ["j0", "j1"] and [r.id for r in records] == ["j0", "j1"]
    assert hot.depths(scope, "mail", NOW).ready == 3


def test_concurrent_claimers_get_disjoint_jobs(planes) -> None:
    store, hot, scope = planes
    jobs = [f"j{i:03d}" for i in range(120)]
    add(store, hot, scope, *(Signal(job_id) for job_id in jobs))
    got: dict[str, list[tuple[list[str], list[str]]]] = {f"w{n}": [] for n in range(4)}
    start = threading.Barrier(len(got))

    def claimer(worker: str) -> None:
        start.wait()
        while True:
            leases, records = claim_and_read(store, scope, 7, worker=worker)
            if not leases:
                return
            got[worker].append(([le.job_id for le in leases], [r.id for r in records]))

    threads = [threading.Thread(target=claimer, args=(worker,)) for worker in got]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    claimed = [job_id for batches in got.values() for ids, _ in batches for job_id in ids]
    assert sorted(claimed) == jobs  # every job once: none twice, none lost
    assert all(sorted(ids) == sorted(read) for batches in got.values() for ids, read in batches)
    for worker, batches in got.items():
        assert sorted(le.job_id for le in hot.leases_of(scope, "mail", worker)) == sorted(
            job_id for ids, _ in batches for job_id in ids)


def test_a_holder_that_dies_is_rescued_like_after_a_plain_claim(planes) -> None:
    store, hot, scope = planes
    add(store, hot, scope, Signal("a"), Signal("b"))
    leases, _ = claim_and_read(store, scope, 10)
    assert hot.take_expired(scope, "mail", now=NOW + LEASE - 1, limit=10) == []  # still held
    rescued = hot.take_expired(scope, "mail", now=NOW + LEASE, limit=10)
    assert [(le.job_id, le.token, le.worker) for le in rescued] == [(le.job_id, le.token, "w1") for le in leases]


def test_a_closed_store_claims_nothing(planes) -> None:
    store, hot, scope = planes
    add(store, hot, scope, Signal("a"))
    store.close()
    with pytest.raises(BackendUnavailable):
        claim_and_read(store, scope, 10)
    assert hot.depths(scope, "mail", NOW).ready == 1


def test_the_claim_raises_the_queues_floor_as_the_hot_planes_claim_does(pg_planes, pg_schema_url,
                                                                          monkeypatch) -> None:
    store, hot, scope = pg_planes
    monkeypatch.setattr(heads, "RAISE_EVERY", 0.0)
    add(store, hot, scope, *(Signal(f"f{i:04d}") for i in range(300)))
    leases, _ = claim_and_read(store, scope, 290)
    assert len(leases) == 290
    with psycopg.connect(pg_schema_url) as conn:
        floor = conn.execute("SELECT lo_rank, lo_ord FROM oqron_hot_heads WHERE project = %s AND queue = 'mail'",
                             (scope.project,)).fetchone()
        first_left = conn.execute("SELECT -priority, ord FROM oqron_hot_jobs WHERE project = %s AND job_id = %s",
                                  (scope.project, "f0290")).fetchone()
    assert floor == first_left  # the last claimed job's position: the next claim starts there
    assert [le.job_id for le in claim_and_read(store, scope, 100)[0]] == [f"f{i:04d}" for i in range(290, 300)]


def test_the_claims_asynchronous_commit_stays_in_its_transaction(pg_planes) -> None:
    """The claim commits without waiting for the WAL flush (hot state); the durable
    writes that follow on the same pooled connection still wait for it."""
    store, hot, scope = pg_planes
    add(store, hot, scope, Signal("a"))
    assert claim_and_read(store, scope, 10)[0]
    with store._pool.connection() as conn:
        assert conn.execute("SHOW synchronous_commit").fetchone() == ("on",)


def claim_read_plan(url: str, scope: Scope, *, analyzed: bool, plan_cache_mode: str) -> str:
    from oqronkit.backends.postgres.statements import claim_read_statement

    params = {"project": scope.project, "environment": scope.environment, "queue": "mail", "now": NOW,
              "limit": 10, "expires_at": NOW + LEASE, "worker": "w", "namespace": NAMESPACE}
    with psycopg.connect(url) as conn:
        if analyzed:
            conn.execute("ANALYZE oqron_jobs")
        conn.execute(f"SET plan_cache_mode = {plan_cache_mode}")
        [(plan,)] = conn.execute(b"EXPLAIN (FORMAT JSON) " + claim_read_statement("jobs"), params).fetchall()
        conn.rollback()
    return json.dumps(plan)


@pytest.mark.parametrize("plan_cache_mode", ["force_custom_plan", "force_generic_plan"])
def test_each_claimed_jobs_row_is_read_by_its_primary_key(pg_planes, pg_schema_url, plan_cache_mode) -> None:
    """Not by walking the namespace's rows: a queue of a million waiting jobs would read them all."""
    store, hot, scope = pg_planes
    # 5,000 rows: at 500 the walk of oqron_jobs_status_created_idx (id last) could tie the key's cost.
    add(store, hot, scope, *(Signal(f"j{i:04d}") for i in range(5000)))
    plan = claim_read_plan(pg_schema_url, scope, analyzed=True, plan_cache_mode=plan_cache_mode)
    assert '"Index Name": "oqron_jobs_pkey"' in plan and "Join Filter" not in plan, plan


@pytest.mark.parametrize("plan_cache_mode", ["force_custom_plan", "force_generic_plan"])
def test_before_any_statistics_the_claimed_id_still_bounds_the_index_scan(pg_planes, pg_schema_url,
                                                                           plan_cache_mode) -> None:
    """The lateral read is never flattened into a join (OFFSET 0): flattened, a table
    without statistics had the id as a join filter applied to every row of the namespace."""
    store, hot, scope = pg_planes
    add(store, hot, scope, *(Signal(f"j{i:04d}") for i in range(500)))
    plan = claim_read_plan(pg_schema_url, scope, analyzed=False, plan_cache_mode=plan_cache_mode)
    assert "Join Filter" not in plan and "(id = c.job_id)" in plan, plan


def test_on_a_lent_connection_the_applications_commit_stays_synchronous(pg_planes, pg_schema_url) -> None:
    """A claim on a connection an application lent (borrowed.py) runs in its transaction:
    the claim's asynchronous commit must not become the application's."""
    from oqronkit.backends.borrowed import lending

    store, hot, scope = pg_planes
    add(store, hot, scope, Signal("a"))
    with psycopg.connect(pg_schema_url) as conn:
        conn.execute("SELECT 1")  # the application's transaction is open
        with lending(pg_schema_url, conn):
            leases, records = claim_and_read(store, scope, 10)
        assert [le.job_id for le in leases] == ["a"] and [r.id for r in records] == ["a"]
        assert conn.execute("SHOW synchronous_commit").fetchone() == ("on",)
