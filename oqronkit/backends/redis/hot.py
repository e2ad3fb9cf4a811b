"""Redis hot plane: the broker, leases, locks, counters and ephemeral keys of the
``redis`` and ``redis-postgres`` modes.

Every multi-step operation is one Lua script (``lua/*.lua``; each header lists its KEYS,
ARGV and key patterns), so it is atomic on the server and one round trip. Per queue:

* ``ready``: a sorted set whose score packs (priority DESC, enqueue sequence ASC, or DESC
  for LIFO) into one exact double (see ``lua/queue_lib.lua``), so a claim is a ZPOPMIN;
* ``delayed``: the due-time set (score ``run_at``), with each job's priority and LIFO flag
  in the ``meta`` hash so promotion keeps them; a delayed job holds no lease;
* ``leases`` (job -> "<token>|<worker>") and ``expiry`` (job -> lease expiry) for
  ack/extend/release and the rescuer's ``take_expired``;
* ``seq`` and ``token``: INCR counters; fencing tokens strictly increase per queue.

Times are the callers' ``now`` (the protocol's clock), never the server's. Wake-ups go
by pub/sub (see :mod:`.waker` for why). Reads, and writes that may safely run twice, are
retried with exponential backoff after a connection error; everything else fails at once
as :class:`~oqronkit.errors.BackendUnavailable` (a claim whose reply was lost must not be
repeated: the worker asks ``leases_of`` what it holds once the plane answers).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from redis.cluster import RedisCluster

from ...codec import dumps_compact
from ...config import redact_url
from ...errors import BackendUnavailable
from ..hot_types import MAX_PRIORITY, MIN_PRIORITY, HotSample, Lease, QueueDepths, Signal
from ..types import Scope
from .broadcast import RedisBroadcast
from .connection import (
    CONNECT_TIMEOUT_S,
    READ_RETRIES,
    SOCKET_TIMEOUT_S,
    call,
    check_eviction_policy,
    check_pubsub_allowed,
    check_server_version,
    disconnect_idle,
    is_cluster_url,
    node_where,
    not_run_retry,
    open_hot_client,
    primaries,
    read_retry,
    translated,
)
from .keys import GC_GRACE_MS, counter_key, kv_keys, lock_key, queue_keys
from .qlimits import RedisQueueLimits
from .rates import RedisRateLimits
from .replicated import run_replicated
from .scripts import PROMOTE_BATCH, Scripts
from .sharded import publish_command
from .waker import Waker

SCRIPTS = (
    "signal", "claim", "extend", "ack", "release", "take_expired", "leases_of", "remove", "promote", "present",
    "depths", "sample", "lock_acquire", "lock_release", "kv_set", "kv_get", "kv_all", "kv_delete", "kv_prune",
    "rate_hit", "rate_drop", "rate_override", "claim_limited", "start_limited",
)
#: Scripts whose effect must outlive a cluster failover before the caller acts on it.
REPLICATED = frozenset({"claim", "claim_limited"})
#: Signals per script call: a bigger batch is split, pipelined in one round trip.
SIGNAL_BATCH = 5000
_KV_DELETE_BATCH = 1000


class RedisHotPlane(RedisBroadcast, RedisQueueLimits, RedisRateLimits):
    """Hot plane on Redis. Safe to share between threads; building one never touches
    the network (the pool connects on first use)."""

    name = "redis"
    transaction_domain: str | None = None
    joins_database: str | None = None
    #: The URL of a standalone server (a durable store on it signals in its insert's
    #: script); None on a Cluster, whose scripts cannot span two hash tags.
    signal_domain: str | None

    def __init__(
        self,
        url: str,
        *,
        check_eviction: bool = True,
        connect_timeout: float = CONNECT_TIMEOUT_S,
        socket_timeout: float = SOCKET_TIMEOUT_S,
        read_retries: int = READ_RETRIES,
    ) -> None:
        self._where = redact_url(url)
        self.signal_domain = None if is_cluster_url(url) else url
        self._check_eviction = check_eviction
        with translated(self._where, "connect"):  # a cluster client reads the topology when built
            self._client = open_hot_client(url, connect_timeout=connect_timeout, socket_timeout=socket_timeout)
        self._scripts = Scripts(self._client, SCRIPTS)
        self._retry, self._not_run = read_retry(read_retries), not_run_retry(read_retries)
        self._closed = False
        self._waker_lock = threading.Lock()
        self._waker: Waker | None = None
        self._waker_pid = os.getpid()
        self._publish = publish_command(self._client)  # SPUBLISH on a cluster: wake-ups stay in their shard

    # -- lifecycle -------------------------------------------------------------------

    def ensure_ready(self) -> None:
        """Check the server's version, its eviction policy and that this user may
        publish, then load every script (a server refusing them fails here, not on the
        first claim)."""
        def start() -> None:
            for node in primaries(self._client):  # a cluster: every master holds keys
                where = node_where(node, self._where)
                check_server_version(node, where)
                check_eviction_policy(node, where, enforce=self._check_eviction)
            check_pubsub_allowed(self._client, self._where)
            self._scripts.load_all()

        self._call("ensure_ready", start, retry=True)

    def close(self) -> None:
        self._closed = True
        with self._waker_lock:
            waker, self._waker = self._waker, None
        if waker is not None:
            waker.close()
        self._close_broadcast()
        # Idle connections only: a call still in flight on another thread finishes (its
        # reply is already on the way) rather than failing under it; its connection is
        # closed when the pool is collected.
        disconnect_idle(self._client)

    # -- broker ----------------------------------------------------------------------

    def signal(self, scope: Scope, queue: str, signals: Sequence[Signal], now: int) -> None:
        if not signals:
            return
        calls = [("signal", keys, args) for keys, args in signal_calls(scope, queue, signals, now, self._publish)]
        # Signalling is idempotent, so a retry (or a resend after a lost reply) is safe.
        if len(calls) == 1:
            self._script("signal", calls[0][1], calls[0][2], retry=True)
        else:
            self._call("signal", lambda: self._scripts.run_many(calls), retry=True)

    def claim(
        self, scope: Scope, queue: str, *, worker_id: str, limit: int, lease_ms: int, now: int
    ) -> list[Lease]:
        if limit <= 0:
            return []
        k = queue_keys(scope, queue)
        expires_at = now + lease_ms
        found = json.loads(self._script("claim", [k.ready, k.delayed, k.meta, k.leases, k.expiry, k.seq, k.token],
                                        [now, limit, expires_at, worker_id, PROMOTE_BATCH]))
        if not found:
            return []
        first = int(found[0])
        return [Lease(job_id, first + i, expires_at) for i, job_id in enumerate(found[1:])]

    def extend(
        self, scope: Scope, queue: str, leases: Sequence[Lease], *, lease_ms: int, now: int
    ) -> list[Lease]:
        if not leases:
            return []
        k = queue_keys(scope, queue)
        expires_at = now + lease_ms
        # Renewing twice with the same expiry changes nothing: safe to retry.
        kept = json.loads(self._script("extend", [k.ready, k.delayed, k.leases, k.expiry, k.token],
                                       [expires_at, _pairs(leases)], retry=True))
        return [Lease(leases[i - 1].job_id, leases[i - 1].token, expires_at) for i in kept]

    def ack(self, scope: Scope, queue: str, leases: Sequence[Lease]) -> set[str]:
        if not leases:
            return set()
        k = queue_keys(scope, queue)
        return set(json.loads(self._script("ack", [k.leases, k.expiry], [_pairs(leases)])))

    def release(self, scope: Scope, queue: str, lease: Lease, signal: Signal, now: int) -> bool:
        if signal.job_id != lease.job_id:
            raise ValueError(f"release() puts back the leased job {lease.job_id!r}, not {signal.job_id!r}.")
        k = queue_keys(scope, queue)
        args = [lease.job_id, lease.token, now, _priority(signal.priority),
                "" if signal.run_at is None else signal.run_at, int(signal.lifo), k.channel, self._publish]
        return bool(self._script("release", [k.ready, k.delayed, k.meta, k.leases, k.expiry, k.seq], args))

    def take_expired(self, scope: Scope, queue: str, *, now: int, limit: int) -> list[Lease]:
        if limit <= 0:
            return []
        k = queue_keys(scope, queue)
        flat = json.loads(self._script("take_expired", [k.leases, k.expiry], [now, limit]))
        return [Lease(flat[i], int(flat[i + 1]), int(flat[i + 2]), flat[i + 3]) for i in range(0, len(flat), 4)]

    def leases_of(self, scope: Scope, queue: str, worker_id: str) -> list[Lease]:
        k = queue_keys(scope, queue)
        flat = json.loads(self._script("leases_of", [k.leases, k.expiry], [worker_id], retry=True))
        leases = [Lease(flat[i], int(flat[i + 1]), int(float(flat[i + 2])), worker_id)
                  for i in range(0, len(flat), 3)]
        return sorted(leases, key=lambda lease: lease.token)

    def remove(self, scope: Scope, queue: str, job_ids: Sequence[str]) -> set[str]:
        if not job_ids:
            return set()
        k = queue_keys(scope, queue)
        return set(json.loads(self._script("remove", [k.ready, k.delayed, k.meta], [_dumps(list(job_ids))])))

    def promote(self, scope: Scope, queue: str, job_id: str, now: int) -> bool:
        k = queue_keys(scope, queue)
        return bool(self._script("promote", [k.ready, k.delayed, k.meta, k.seq], [job_id, k.channel, self._publish]))

    def present(self, scope: Scope, queue: str, job_ids: Sequence[str]) -> set[str]:
        if not job_ids:
            return set()
        k = queue_keys(scope, queue)
        found = self._script("present", [k.ready, k.delayed, k.leases], [_dumps(list(job_ids))], retry=True)
        return set(json.loads(found))

    def depths(self, scope: Scope, queue: str, now: int) -> QueueDepths:
        k = queue_keys(scope, queue)
        ready, delayed, active = self._script("depths", [k.ready, k.delayed, k.leases], [now], retry=True)
        return QueueDepths(int(ready), int(delayed), int(active))

    def sample(self, scope: Scope, queue: str, *, limit: int) -> HotSample:
        if limit <= 0:
            return HotSample((), ())
        k = queue_keys(scope, queue)
        ids, flat = json.loads(self._script("sample", [k.ready, k.delayed, k.leases, k.expiry], [limit], retry=True))
        leases = tuple(Lease(flat[i], int(flat[i + 1]), int(float(flat[i + 2]))) for i in range(0, len(flat), 3))
        return HotSample(tuple(dict.fromkeys(ids)), leases)

    def next_due(self, scope: Scope, queue: str) -> int | None:
        key = queue_keys(scope, queue).delayed
        first = self._call("next_due", lambda: self._client.zrange(key, 0, 0, withscores=True), retry=True)
        return int(first[0][1]) if first else None

    def wait(self, scope: Scope, queues: Sequence[str], timeout: float) -> bool:
        deadline = time.monotonic() + max(timeout, 0.0)
        if not queues:
            time.sleep(max(timeout, 0.0))
            return False
        keys = [queue_keys(scope, queue) for queue in queues]
        channels = [k.channel for k in keys]
        waker = self._get_waker()
        # Subscribed (and versions noted) before the check: a job made ready after the
        # check publishes a message that moves a noted version.
        seen = self._call("wait", lambda: waker.watch(channels, deadline))
        if any(self._call("wait", lambda: self._ready_counts([k.ready for k in keys]), retry=True)):
            return True
        woke = waker.wait_changed(channels, seen, deadline)
        if waker.closed:
            raise BackendUnavailable(f"The Redis hot plane for {self._where} is closed.")
        return woke

    def _ready_counts(self, ready_keys: list[str]) -> list[int]:
        pipe = self._client.pipeline(transaction=False)
        for key in ready_keys:
            pipe.zcard(key)
        return pipe.execute()

    def _get_waker(self) -> Waker:
        with self._waker_lock:
            if self._closed:
                raise BackendUnavailable(f"The Redis hot plane for {self._where} is closed.")
            if self._waker is None or self._waker_pid != os.getpid():
                # A forked child inherits the parent's Waker but not its listener thread.
                self._waker, self._waker_pid = Waker(self._client), os.getpid()
            return self._waker

    # -- locks and leader election ---------------------------------------------------

    def acquire_lock(self, scope: Scope, name: str, owner: str, *, ttl_ms: int, now: int) -> bool:
        args = [owner, now, now + ttl_ms, max(ttl_ms, 1) + GC_GRACE_MS]
        # Taking or renewing with the same owner, now and ttl twice gives the same answer.
        return bool(self._script("lock_acquire", [lock_key(scope, name)], args, retry=True))

    def release_lock(self, scope: Scope, name: str, owner: str) -> bool:
        return bool(self._script("lock_release", [lock_key(scope, name)], [owner]))

    def lock_owner(self, scope: Scope, name: str, now: int) -> str | None:
        key = lock_key(scope, name)
        # A str reply (open_client decodes them); redis-py's types say bytes | str.
        held = self._call("lock_owner", lambda: cast("str | None", self._client.get(key)), retry=True)
        if held is None:
            return None
        expires_at, _, owner = held.partition("|")
        return owner if int(expires_at) > now else None

    # -- counters and ephemeral keys -------------------------------------------------

    def incr(self, scope: Scope, name: str, by: int = 1) -> int:
        key = counter_key(scope, name)
        return int(self._call("incr", lambda: self._client.incrby(key, by)))

    def get_counters(self, scope: Scope, names: Sequence[str]) -> dict[str, int]:
        if not names:
            return {}
        keys = [counter_key(scope, name) for name in names]
        values = self._call("get_counters", lambda: self._client.mget(keys), retry=True)
        return {name: int(value or 0) for name, value in zip(names, values, strict=True)}

    def kv_set(self, scope: Scope, group: str, items: Mapping[str, str], *, ttl_ms: int, now: int) -> None:
        if not items:
            return
        args: list[Any] = [now, now + ttl_ms, max(ttl_ms, 1) + GC_GRACE_MS]
        for key, value in items.items():
            args += [key, value]
        self._script("kv_set", list(kv_keys(scope, group)), args, retry=True)

    def kv_get(self, scope: Scope, group: str, keys: Sequence[str], now: int) -> dict[str, str]:
        if not keys:
            return {}
        flat = self._script("kv_get", list(kv_keys(scope, group)), [now, *keys], retry=True)
        return dict(zip(flat[::2], flat[1::2], strict=True))

    def kv_all(self, scope: Scope, group: str, now: int) -> dict[str, str]:
        flat = self._script("kv_all", list(kv_keys(scope, group)), [now], retry=True)
        return dict(zip(flat[::2], flat[1::2], strict=True))

    def kv_delete(self, scope: Scope, group: str, keys: Sequence[str]) -> None:
        names = list(kv_keys(scope, group))
        for start in range(0, len(keys), _KV_DELETE_BATCH):
            self._script("kv_delete", names, list(keys[start:start + _KV_DELETE_BATCH]), retry=True)

    def kv_get_with_counters(
        self, scope: Scope, group: str, keys: Sequence[str], counters: Sequence[str], now: int
    ) -> tuple[dict[str, str], dict[str, int]]:
        # One pipelined round trip, not one script: the counters and the group live in
        # different cluster slots (keys.py). Both are reads: safe to retry.
        calls: list[tuple[str, Sequence[str], Sequence[Any]]] = []
        if keys:
            calls.append(("kv_get", list(kv_keys(scope, group)), [now, *keys]))
        names = [counter_key(scope, name) for name in counters]
        replies = self._call("kv_get_with_counters", lambda: self._scripts.run_many(calls, mget=names), retry=True)
        flat, values = (replies[0] if keys else []), replies[-1]
        found = dict(zip(flat[::2], flat[1::2], strict=True))
        return found, {name: int(value or 0) for name, value in zip(counters, values, strict=True)}

    def kv_prune(self, scope: Scope, group: str, now: int) -> int:
        # Dropping what lapsed before a given now twice drops nothing more: safe to retry.
        return int(self._script("kv_prune", list(kv_keys(scope, group)), [now], retry=True))

    # -- calls -----------------------------------------------------------------------

    def _script(self, name: str, keys: Sequence[str], args: Sequence[Any], *, retry: bool = False) -> Any:
        script, client = self._scripts[name], self._client
        if name in REPLICATED and isinstance(client, RedisCluster):
            return self._call(name, lambda: run_replicated(client, script, keys, args), retry=retry)
        return self._call(name, lambda: script(keys=keys, args=args), retry=retry)

    def _call[T](self, action: str, fn: Callable[[], T], *, retry: bool = False) -> T:
        if self._closed:
            raise BackendUnavailable(f"The Redis hot plane for {self._where} is closed.")
        return call(self._where, action, fn, self._retry if retry else self._not_run)


def signal_calls(scope: Scope, queue: str, signals: Sequence[Signal], now: int, publish: str
                 ) -> list[tuple[list[str], list[Any]]]:
    """signal.lua's (KEYS, ARGV) per batch of :data:`SIGNAL_BATCH` signals (also the
    signalling half of the durable store's insert_and_signal.lua)."""
    k = queue_keys(scope, queue)
    keys = [k.ready, k.delayed, k.meta, k.leases, k.seq]
    return [(keys, [now, k.channel, signals_json(signals[start:start + SIGNAL_BATCH]), publish])
            for start in range(0, len(signals), SIGNAL_BATCH)]


def signals_json(signals: Sequence[Signal]) -> str:
    """signal_lib.lua's batch argument: [[job id, priority, run_at or null, lifo], ...]."""
    return _dumps([[s.job_id, _priority(s.priority), s.run_at, bool(s.lifo)] for s in signals])


def _priority(priority: int) -> int:
    # The ready-set score packs priorities of this range exactly (lua/queue_lib.lua).
    if not MIN_PRIORITY <= priority <= MAX_PRIORITY:
        raise ValueError(f"priority must be from {MIN_PRIORITY} to {MAX_PRIORITY}, got {priority!r}.")
    return priority


def _pairs(leases: Sequence[Lease]) -> str:
    """[[job id, token text], ...] as JSON: the scripts compare token texts."""
    return _dumps([[lease.job_id, str(lease.token)] for lease in leases])


def _dumps(value: Any) -> str:
    # Batches travel as one JSON argument (lua/queue_lib.lua says why); UTF-8 kept (no
    # ensure_ascii) is what cjson reads and writes. codec's encoder: 2 us, json.dumps 5.7.
    return dumps_compact(value)
