"""What only the Redis plane on a Redis Cluster has to prove (the contract suite runs on
it as "redis-cluster"): the cluster URL, the eviction check on every master, a claim
held by the replicas before it is handed out, two processes' claims disjoint, and
wake-ups across nodes. Runs on the session's local cluster (tests/redis_cluster.py)."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
import redis

from oqronkit import OqronConfig
from oqronkit.backends.hot_types import Signal
from oqronkit.backends.redis import RedisHotPlane
from oqronkit.backends.redis.connection import open_cluster
from oqronkit.backends.redis.keys import queue_keys
from oqronkit.errors import ConfigurationError

from .conftest import LEASE, NOW, assert_two_processes_never_share_a_job


@pytest.fixture
def hot_backend_name() -> str:
    return "redis-cluster"  # the folder's `hot` fixture (this test's keys dropped after)


def test_the_cluster_url_is_accepted_in_redis_postgres_and_refused_in_redis_mode():
    url = "redis+cluster://10.0.0.1:6379,10.0.0.2:6379"
    assert OqronConfig(mode="redis-postgres", database_url="postgresql://h/db", redis_url=url).redis_url == url
    with pytest.raises(ConfigurationError, match="durable store on a single Redis"):
        OqronConfig(mode="redis", database_url=None, redis_url=url)


@pytest.mark.parametrize("url", ["redis+cluster://host-without-port", "redis+cluster://h:1,h2", "redis+cluster://h:1/3"])
def test_a_malformed_cluster_url_names_what_is_wrong(url):
    with pytest.raises(ConfigurationError):
        open_cluster(url, connect_timeout=1, socket_timeout=1)


def test_any_reachable_startup_node_is_enough(redis_cluster, scope):
    dead = "127.0.0.1:1"  # nothing listens on port 1
    plane = RedisHotPlane(redis_cluster.url.replace("://", f"://{dead},"))
    try:
        plane.ensure_ready()
        assert plane.depths(scope, "q", NOW).ready == 0
    finally:
        plane.close()


def test_the_eviction_policy_is_checked_on_every_master(redis_cluster):
    last = redis_cluster.masters()[-1]
    node = redis.Redis(host="127.0.0.1", port=last)
    node.config_set("maxmemory-policy", "allkeys-lru")
    try:
        plane = RedisHotPlane(redis_cluster.url)
        try:
            with pytest.raises(ConfigurationError, match=f"node 127.0.0.1:{last}.*allkeys-lru"):
                plane.ensure_ready()
        finally:
            plane.close()
    finally:
        node.config_set("maxmemory-policy", "noeviction")
        node.close()


def test_a_claim_is_on_the_replica_when_it_is_handed_out(hot, scope, redis_cluster):
    hot.signal(scope, "q", [Signal(f"j{i}") for i in range(20)], NOW)
    keys = queue_keys(scope, "q")
    replica = redis.Redis(host="127.0.0.1", port=redis_cluster.replica_of(redis_cluster.master_of(keys.leases)))
    try:
        for _ in range(10):  # WAIT, not luck: no pause between the claim and the read
            leases = hot.claim(scope, "q", worker_id="w", limit=2, lease_ms=LEASE, now=NOW)
            replica.execute_command("READONLY")
            held = replica.hmget(keys.leases, [lease.job_id for lease in leases])
            assert all(held), held
    finally:
        replica.close()


def test_two_processes_never_share_a_job(hot, redis_cluster, scope_names):
    assert_two_processes_never_share_a_job(hot, RedisHotPlane, redis_cluster.url, scope_names)


def test_a_wake_up_published_on_one_master_reaches_a_waiter_on_any_node(hot, scope):
    # Two queues whose keys live on different masters: one wait serves both.
    queues = [f"q{i}" for i in range(40)]
    woke: list[bool] = []
    waiter = threading.Thread(target=lambda: woke.append(hot.wait(scope, queues, 5.0)))
    waiter.start()
    time.sleep(0.3)
    started = time.monotonic()
    hot.signal(scope, queues[-1], [Signal("late")], NOW)
    waiter.join(6)
    assert woke == [True] and time.monotonic() - started < 1.0


def test_a_claim_outlives_its_master_even_when_the_replica_lags(scope):
    # The replica is stopped (SIGSTOP) during the claim: the claim's reply waits until
    # the replica, resumed, has acknowledged it (the WAIT); then the master dies and the
    # replica takes over (CLUSTER FAILOVER TAKEOVER) with the lease. On one host a
    # SIGKILLed master's socket still delivers what it had sent, so only the wait is the
    # WAIT's own proof here; a host crash or a partition loses an unacknowledged claim.
    from tests.redis_cluster import local_cluster

    with local_cluster() as cluster:
        plane = RedisHotPlane(cluster.url)
        try:
            plane.ensure_ready()
            plane.signal(scope, "q", [Signal("j")], NOW)
            master = cluster.master_of(queue_keys(scope, "q").leases)
            replica = cluster.replica_of(master)
            plane.depths(scope, "q", NOW)  # connected: the claim below is one round trip
            claimed: list[list] = []
            os.kill(cluster.pid(replica) or 0, signal.SIGSTOP)
            try:
                claiming = threading.Thread(target=lambda: claimed.append(
                    plane.claim(scope, "q", worker_id="w", limit=1, lease_ms=LEASE, now=NOW)))
                claiming.start()
                claiming.join(0.25)
                held_back = claiming.is_alive()
            finally:
                os.kill(cluster.pid(replica) or 0, signal.SIGCONT)
            claiming.join(5)
            assert held_back, "the claim's reply should wait for the stopped replica"
            cluster.kill(master)
            cluster.take_over(replica)
            depths = _eventually(lambda: plane.depths(scope, "q", NOW))
            assert [lease.job_id for lease in claimed[0]] == ["j"] and (depths.ready, depths.active) == (0, 1)
            assert plane.claim(scope, "q", worker_id="w2", limit=1, lease_ms=LEASE, now=NOW) == []
        finally:
            plane.close()


def _eventually(fn, timeout: float = 20.0):
    """``fn()`` once the client has found the new master (calls fail until it has)."""
    from oqronkit.errors import BackendUnavailable

    deadline = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except BackendUnavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
