"""Wake-ups and broadcasts on a Redis Cluster go by sharded pub/sub (SPUBLISH /
SSUBSCRIBE on the master owning the channel's slot, backends/redis/sharded.py), and come
back by themselves after that master is SIGKILLed and its replica promoted."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
import redis

from oqronkit.backends.hot_types import Signal
from oqronkit.backends.redis import RedisHotPlane
from oqronkit.backends.redis.keys import broadcast_channel, queue_keys
from oqronkit.backends.types import Scope
from oqronkit.errors import BackendUnavailable
from tests.redis_cluster import LocalCluster, local_cluster

from .conftest import LEASE, NOW


@pytest.fixture
def hot_backend_name() -> str:
    return "redis-cluster"  # the folder's `hot` fixture (this test's keys dropped after)


def shard_subscribers(port: int, channel: str) -> int:
    node = redis.Redis(host="127.0.0.1", port=port)
    try:
        return int(node.execute_command("PUBSUB", "SHARDNUMSUB", channel)[1])
    finally:
        node.close()


def eventually[T](fn: Callable[[], T], timeout: float) -> T:
    """``fn()``'s first truthy answer; a BackendUnavailable (the cluster mid-failover)
    counts as not yet."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            answer = fn()
            if answer:
                return answer
        except BackendUnavailable:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"not within {timeout} s")
        time.sleep(0.1)


def wake_seconds(plane: RedisHotPlane, scope: Scope, queue: str, job_id: str) -> float | None:
    """Signal ``job_id`` on an empty queue while a thread waits on it: seconds from the
    signal to the wake-up, or None when the wait timed out."""
    woke: list[float] = []
    waiter = threading.Thread(target=lambda: plane.wait(scope, [queue], 4.0) and woke.append(time.monotonic()))
    waiter.start()
    time.sleep(0.3)  # subscribed and asleep
    sent = time.monotonic()
    eventually(lambda: plane.signal(scope, queue, [Signal(job_id)], NOW) or True, 10)
    waiter.join(6)
    eventually(lambda: plane.claim(scope, queue, worker_id="w", limit=10, lease_ms=LEASE, now=NOW), 10)
    return woke[0] - sent if woke else None


def test_a_queue_wake_up_is_a_shard_message_of_its_queue_master(hot, redis_cluster, scope):
    channel = queue_keys(scope, "q").channel
    master = redis_cluster.master_of(channel)
    other = next(port for port in redis_cluster.masters() if port != master)
    sharded = redis.Redis(host="127.0.0.1", port=master, decode_responses=True).pubsub()
    classic = redis.Redis(host="127.0.0.1", port=other, decode_responses=True).pubsub()
    try:
        sharded.ssubscribe(channel)
        classic.subscribe(channel)
        assert sharded.get_sharded_message(timeout=2)["type"] == "ssubscribe"
        assert classic.get_message(timeout=2)["type"] == "subscribe"
        hot.signal(scope, "q", [Signal("j")], NOW)
        message = sharded.get_sharded_message(timeout=2)
        assert message is not None and (message["type"], message["channel"]) == ("smessage", channel)
        assert classic.get_message(timeout=0.5) is None  # no classic PUBLISH crossed the bus
    finally:
        sharded.close()
        classic.close()


def test_the_listeners_subscribe_on_each_channels_master(hot, redis_cluster, scope):
    queues = [f"q{i}" for i in range(12)]  # spread over the three masters
    assert hot.wait(scope, queues, 0.2) is False
    subscription = hot.listen(scope, "inval", lambda message: None)
    assert subscription.ready.wait(5)
    for name in [queue_keys(scope, q).channel for q in queues] + [broadcast_channel(scope, "inval")]:
        assert shard_subscribers(redis_cluster.master_of(name), name) == 1, name
    subscription.close()


def test_wake_ups_and_broadcasts_come_back_after_the_channels_master_fails_over(scope):
    with local_cluster() as cluster:
        plane = RedisHotPlane(cluster.url)
        try:
            plane.ensure_ready()
            channel = queue_keys(scope, "q").channel
            master = cluster.master_of(channel)
            topic = _broadcast_channel_on(cluster, scope, master)
            got: list[str | None] = []
            subscription = plane.listen(scope, topic, got.append)
            assert subscription.ready.wait(5)
            woke = wake_seconds(plane, scope, "q", "before")
            assert woke is not None and woke < 1.0, woke

            replica = cluster.replica_of(master)
            cluster.kill(master)
            cluster.wait_failover(master)
            # Both listeners noticed, re-read the topology and subscribed on the promoted replica.
            eventually(lambda: shard_subscribers(replica, channel) == 1, 15)
            eventually(lambda: shard_subscribers(replica, broadcast_channel(scope, topic)) == 1, 15)
            assert subscription.ready.wait(5)
            assert None in got  # "you may have missed messages"
            for n in range(2):
                woke = wake_seconds(plane, scope, "q", f"after-{n}")
                assert woke is not None and woke < 1.0, woke
            eventually(lambda: plane.broadcast(scope, topic, "after") or True, 10)
            eventually(lambda: "after" in got, 2)
        finally:
            plane.close()


def _broadcast_channel_on(cluster: LocalCluster, scope: Scope, master: int) -> str:
    """A broadcast channel name whose slot is on ``master``."""
    return next(name for name in (f"inval-{i}" for i in range(1000))
                if cluster.master_of(broadcast_channel(scope, name)) == master)
