"""The Redis durable store's ``claim_and_read`` (claim_and_read.lua: the redis-mode
worker's claim with its jobs' rows, one round trip) is ``HotPlane.claim`` followed by
``get_many``: the same leases (claim order, consecutive tokens after the hot plane's
own, due delayed jobs promoted), the same rows, a lease without a record for a job
whose row is gone, and leases the hot plane's rescuer and ``leases_of`` see, so a
worker that dies holding them is rescued as after a plain claim."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from oqronkit.backends.hot_types import Signal
from oqronkit.backends.protocols import ClaimingStore
from oqronkit.backends.redis import RedisDurableStore, RedisHotPlane
from oqronkit.backends.types import EncodedRow, Scope
from oqronkit.errors import BackendUnavailable
from tests.services import drop_redis_project, require_redis

NOW = 1_700_000_000_000
LEASE = 30_000
NAMESPACE = "queue_job:mail"


@pytest.fixture
def planes(scope_names) -> Iterator[tuple[RedisDurableStore, RedisHotPlane, Scope]]:
    url = require_redis()
    store, hot = RedisDurableStore(url), RedisHotPlane(url)
    store.ensure_schema()
    hot.ensure_ready()
    try:
        yield store, hot, Scope(*scope_names)
    finally:
        store.close()
        hot.close()
        drop_redis_project(url, scope_names[0])


def add(store: RedisDurableStore, hot: RedisHotPlane, scope: Scope, *signals: Signal) -> None:
    rows = [EncodedRow(NAMESPACE, s.job_id, "job", "jobs", json.dumps({"id": s.job_id, "n": i}), NOW, None)
            for i, s in enumerate(signals)]
    store.put_many(scope, rows)
    hot.signal(scope, "mail", list(signals), NOW)


def claim_and_read(store: RedisDurableStore, scope: Scope, limit: int, now: int = NOW):
    return store.claim_and_read(scope, "mail", "jobs", NAMESPACE, worker_id="w1", limit=limit, lease_ms=LEASE,
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
    assert records == store.get_many(scope, "jobs", NAMESPACE, ["low", "later"])
    assert claim_and_read(store, scope, 10, now=NOW + 1000) == ([], [])  # nothing left ready
    assert hot.leases_of(scope, "mail", "w1") == leases


def test_a_job_whose_row_is_gone_has_a_lease_and_no_record(planes) -> None:
    store, hot, scope = planes
    add(store, hot, scope, Signal("kept"), Signal("deleted"))
    store.delete_many(scope, "jobs", NAMESPACE, ["deleted"])
    leases, records = claim_and_read(store, scope, 10)
    assert [le.job_id for le in leases] == ["kept", "deleted"]  # the worker acks the gone one
    assert [r.id for r in records] == ["kept"]


def test_a_limit_of_nothing_claims_nothing(planes) -> None:
    store, hot, scope = planes
    add(store, hot, scope, Signal("a"))
    assert claim_and_read(store, scope, 0) == ([], [])
    assert hot.depths(scope, "mail", NOW).ready == 1


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
