"""Pub/sub on a Redis Cluster through sharded channels (SPUBLISH / SSUBSCRIBE, Redis 7.0+).

Why sharded: a classic PUBLISH on a cluster is forwarded over the cluster bus to every
node, so each wake-up costs every node some CPU and that cost grows with the cluster; a
SPUBLISH stays within the shard that owns the channel's slot (its master and replicas).
``bench/cluster_pubsub.py`` measures the difference. A script may SPUBLISH only to a
channel in the slot of its keys, which the queue wake channels are (keys.py).

:class:`ShardedPubSub` stands in for redis-py's ``PubSub`` in the waker and the broadcast
listener: ``subscribe`` SSUBSCRIBEs each channel on the master that owns its slot,
``get_message`` hands out what any of those connections read, renamed to the classic
types ("subscribe", "message") so the callers need not care. One reader thread per node:
redis-py's own ``ClusterPubSub.get_sharded_message`` also polls every node, but it hides a
node's dropped connection (it reconnects and resubscribes by itself, raising only when
every node failed), and its callers must know of every reconnect, since messages sent
meanwhile are lost. Here a dropped connection, a MOVED reply to SSUBSCRIBE, or a slot
moving away (the node's unsolicited "sunsubscribe") is raised from ``get_message``
after the client's topology has been read again, so the caller's reconnect subscribes
on the slot's new owner (a failover's promoted replica).
"""

from __future__ import annotations

import queue
import threading
from collections import defaultdict
from typing import Any

from redis.client import PubSub
from redis.cluster import RedisCluster
from redis.crc import key_slot
from redis.exceptions import ConnectionError

from .connection import Client

#: A reader wakes this often to notice close().
_SLICE_S = 0.5
_RENAMED = {"ssubscribe": "subscribe", "smessage": "message"}


def open_pubsub(client: Client) -> Subscriber:
    """The hot plane's subscriber: sharded on a cluster, classic on one server."""
    if isinstance(client, RedisCluster):
        return ShardedPubSub(client)
    return client.pubsub()


def publish_command(client: Client) -> str:
    """The command the hot plane (and its scripts) publish with."""
    return "SPUBLISH" if isinstance(client, RedisCluster) else "PUBLISH"


def publish(client: Client, channel: str, message: str) -> None:
    if isinstance(client, RedisCluster):
        client.spublish(channel, message)  # routed to the master of the channel's slot
    else:
        client.publish(channel, message)


class ShardedPubSub:
    """Shard-channel subscriptions on the masters owning them, read as one stream."""

    def __init__(self, cluster: RedisCluster) -> None:
        self._cluster = cluster
        self._lock = threading.Lock()
        self._nodes: dict[str, PubSub] = {}
        self._inbox: queue.SimpleQueue[dict[str, Any] | Exception] = queue.SimpleQueue()
        self._closed = False

    def subscribe(self, *channels: str) -> None:
        """SSUBSCRIBE each channel on its slot's master (one command per slot: Redis
        refuses a SSUBSCRIBE across slots). Raises the driver's error."""
        by_slot: dict[int, list[str]] = defaultdict(list)
        for channel in channels:
            by_slot[key_slot(channel.encode())].append(channel)
        try:
            with self._lock:
                if self._closed:
                    raise ConnectionError("the sharded subscriber is closed")
                for slot, names in by_slot.items():
                    node = self._cluster.nodes_manager.get_node_from_slot(slot)
                    self._node_pubsub(node.name, node).ssubscribe(*names)
        except Exception:
            self._refresh_topology()  # the next attempt goes to the owners of now
            raise

    def get_message(self, timeout: float = 0.0) -> dict[str, Any] | None:
        """The next confirmation or message of any node, or None after ``timeout``;
        raises once a node's connection failed (or this subscriber was closed)."""
        if self._closed:
            raise ConnectionError("the sharded subscriber is closed")
        try:
            item = self._inbox.get(timeout=timeout)
        except queue.Empty:
            return None
        if isinstance(item, Exception):
            raise item
        return item

    def close(self) -> None:
        with self._lock:
            self._closed = True
            nodes, self._nodes = list(self._nodes.values()), {}
        for pubsub in nodes:
            try:
                pubsub.close()  # its reader's read fails at once and it ends
            except Exception:  # closing a broken connection may fail in many ways; it is gone either way
                pass
        self._inbox.put(ConnectionError("the sharded subscriber is closed"))

    def _node_pubsub(self, name: str, node: Any) -> PubSub:
        """The node's PubSub, opened with its reader thread on first use (_lock held)."""
        pubsub = self._nodes.get(name)
        if pubsub is None:
            pubsub = self._nodes[name] = self._cluster.get_redis_connection(node).pubsub()
            threading.Thread(target=self._read, args=(pubsub,), name=f"oqronkit-redis-shard-{name}",
                             daemon=True).start()
        return pubsub

    def _read(self, pubsub: PubSub) -> None:
        while not self._closed:
            try:
                message = pubsub.get_message(timeout=_SLICE_S)
                kind = message.get("type") if message is not None else None
                if kind == "sunsubscribe":  # we never unsubscribe: the slot moved away
                    raise ConnectionError(f"the slot of shard channel {message['channel']!r} moved")
            except Exception as exc:
                # A dropped connection, a MOVED reply, or close() pulling the socket away.
                if not self._closed:
                    self._refresh_topology()
                    self._inbox.put(exc)
                return
            if kind in _RENAMED:
                self._inbox.put({**message, "type": _RENAMED[kind]})

    def _refresh_topology(self) -> None:
        try:
            self._cluster.nodes_manager.initialize()
        except Exception:  # every node unreachable: the caller's next attempt tries again
            pass


#: What the waker and the broadcast listener read: a classic PubSub, or the sharded one.
type Subscriber = PubSub | ShardedPubSub
