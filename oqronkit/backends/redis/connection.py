"""What both Redis backends share: the client and its pool, driver errors turned into
ours, the read-retry policy, and the start-up check of the eviction policy."""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from urllib.parse import unquote, urlsplit

import redis
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.exceptions import (
    AskError,
    ClusterDownError,
    ReadOnlyError,
    RedisClusterException,
    RedisClusterUnreachableError,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.retry import Retry

from ...errors import BackendUnavailable, ConfigurationError, InvalidRecord

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 5.0
SOCKET_TIMEOUT_S = 10.0
#: Retries of a read (or of a write that may safely run twice) after a connection error,
#: with exponential backoff: 0.1 s, 0.2 s, 0.4 s. A Redis restart or failover usually
#: heals within that; anything longer surfaces as BackendUnavailable, and the worker
#: pauses claiming until calls succeed again.
READ_RETRIES = 3
_BACKOFF_BASE_S = 0.05
_BACKOFF_CAP_S = 1.0


#: A standalone client or a cluster client: both take the same commands and pipelines.
Client = redis.Redis | RedisCluster
CLUSTER_SCHEMES = ("redis+cluster://", "rediss+cluster://")


def is_cluster_url(url: str) -> bool:
    return url.startswith(CLUSTER_SCHEMES)


def open_hot_client(url: str, *, connect_timeout: float, socket_timeout: float) -> Client:
    """The hot plane's client: a cluster client for a ``redis+cluster://`` URL (it reads
    the topology from its first reachable startup node when built), else a standalone one."""
    if is_cluster_url(url):
        return open_cluster(url, connect_timeout=connect_timeout, socket_timeout=socket_timeout)
    return open_client(url, connect_timeout=connect_timeout, socket_timeout=socket_timeout)


def open_client(url: str, *, connect_timeout: float, socket_timeout: float) -> redis.Redis:
    """A lazily connecting client: building one never touches the network.

    The pool itself never retries (redis-py's default retries every command three times,
    which would run a claim or an INCRBY twice after a lost reply); reads opt in through
    :func:`read_retry`. A pooled connection the server closed (restart, idle timeout) is
    detected and reopened when it is next checked out.
    """
    pool = redis.ConnectionPool.from_url(
        url,
        decode_responses=True,
        socket_connect_timeout=connect_timeout,
        socket_timeout=socket_timeout,
        retry=Retry(NoBackoff(), 0),
    )
    return redis.Redis(connection_pool=pool)


def open_cluster(url: str, *, connect_timeout: float, socket_timeout: float) -> RedisCluster:
    """A cluster client for ``redis+cluster://[user:password@]host:port[,host:port...]``
    (``rediss+cluster://`` for TLS): each host is a startup node, any one reachable is
    enough to discover the others.

    MOVED, ASK and TRYAGAIN replies are followed inside redis-py (the command did not
    run). Its retry of connection errors is off (``Retry(NoBackoff(), 0)``), as for the
    standalone pool: a script whose reply was lost may have run, so only the idempotent
    calls retry, through :func:`read_retry`.
    """
    tls = url.startswith("rediss+")
    parsed = urlsplit("redis" + url.split("+cluster", 1)[1])
    nodes = []
    for part in parsed.netloc.rpartition("@")[2].split(","):
        host, _, port = part.rpartition(":")
        if not host or not port.isdigit():
            raise ConfigurationError(f"A Redis Cluster URL lists host:port pairs separated by commas; got {part!r}.")
        nodes.append(ClusterNode(host.strip("[]"), int(port)))  # type: ignore[no-untyped-call]
    if parsed.path.strip("/") not in ("", "0"):
        raise ConfigurationError("A Redis Cluster has only database 0; drop the /<db> from OQRON_REDIS_URL.")
    return RedisCluster(
        startup_nodes=nodes,
        username=unquote(parsed.username) if parsed.username else None,
        password=unquote(parsed.password) if parsed.password else None,
        ssl=tls,
        decode_responses=True,
        socket_connect_timeout=connect_timeout,
        socket_timeout=socket_timeout,
        retry=Retry(NoBackoff(), 0),
    )


def primaries(client: Client) -> list[redis.Redis]:
    """A client per master: the one server, or every master of a cluster (the start-up
    checks run on each, since each holds part of the keys)."""
    if isinstance(client, RedisCluster):
        return [client.get_redis_connection(node) for node in client.get_primaries()]  # type: ignore[no-untyped-call]
    return [client]


def disconnect_idle(client: Client) -> None:
    """Close the idle pooled connections (of every node of a cluster)."""
    if isinstance(client, RedisCluster):
        for node in client.get_nodes():  # type: ignore[no-untyped-call]
            if node.redis_connection is not None:
                node.redis_connection.connection_pool.disconnect(inuse_connections=False)
        return
    client.connection_pool.disconnect(inuse_connections=False)


def node_where(node: redis.Redis, where: str) -> str:
    """``where`` (the redacted URL) naming one node of it, for messages about that node."""
    kwargs = node.connection_pool.connection_kwargs
    return f"{where} (node {kwargs.get('host')}:{kwargs.get('port')})" if "+cluster" in where else where


#: Replies saying the command did not run (a cluster mid-failover or resharding, a
#: demoted master, a slot no client-side table covers): any call may be sent again.
NOT_RUN: tuple[type[Exception], ...] = (
    ClusterDownError, TryAgainError, AskError, ReadOnlyError, SlotNotCoveredError,
)


def read_retry(retries: int = READ_RETRIES) -> Retry:
    """The retry policy of idempotent calls: connection and timeout errors, and replies
    saying the command did not run."""
    return Retry(ExponentialBackoff(cap=_BACKOFF_CAP_S, base=_BACKOFF_BASE_S), retries,
                 supported_errors=(redis.ConnectionError, redis.TimeoutError, socket.timeout,
                                   RedisClusterUnreachableError, *NOT_RUN))


def not_run_retry(retries: int = READ_RETRIES) -> Retry:
    """The retry policy of calls that must not run twice: only replies saying the
    command did not run (a lost reply may hide a script that ran: never retried)."""
    return Retry(ExponentialBackoff(cap=_BACKOFF_CAP_S, base=_BACKOFF_BASE_S), retries, supported_errors=NOT_RUN)


@contextmanager
def translated(where: str, action: str) -> Iterator[None]:
    """Driver errors become :class:`BackendUnavailable` (bad input: InvalidRecord)."""
    try:
        yield
    except redis.DataError as exc:
        raise InvalidRecord(f"Redis refused a value during {action}: {exc}") from exc
    except (redis.RedisError, RedisClusterException) as exc:
        raise BackendUnavailable(f"Redis at {where} failed during {action}: {exc}") from exc


def call[T](where: str, action: str, fn: Callable[[], T], retry: Retry | None = None) -> T:
    """Run ``fn`` with driver errors translated, retrying connection errors if given a
    policy (the failing connection is already dropped by redis-py before each retry)."""
    with translated(where, action):
        if retry is None:
            return fn()
        return retry.call_with_retry(fn, _ignore)


def _ignore(_error: Exception) -> None:
    return None


#: ZMSCORE (the batch membership test of signal, present and remove) came in 6.2.
MIN_REDIS = (6, 2)


def check_server_version(client: redis.Redis, where: str) -> None:
    """Refuse a server too old for the scripts (Valkey reports a compatible version)."""
    try:
        version = str(client.info("server").get("redis_version", ""))
    except redis.ResponseError:  # INFO disabled: the scripts will say so if it matters
        return
    found = tuple(int(part) for part in version.split(".")[:2] if part.isdigit())
    if len(found) == 2 and found < MIN_REDIS:
        raise ConfigurationError(
            f"Redis at {where} is version {version}; the OqronKit hot plane needs Redis "
            f"{MIN_REDIS[0]}.{MIN_REDIS[1]} or later (or Valkey)."
        )


def check_pubsub_allowed(client: Client, where: str) -> None:
    """Refuse a Redis user that may not PUBLISH: the scripts that make jobs ready publish
    the wake-ups (Redis 7 ACL users get no channel access unless given some)."""
    try:
        client.publish("oqron:startup-check", "")  # nobody listens: a harmless probe
    except redis.exceptions.NoPermissionError as exc:
        raise ConfigurationError(
            f"The Redis user at {where} may not use pub/sub channels ({exc}); the hot plane "
            "publishes wake-ups on channels named oqron:*. Grant them, e.g. "
            "`ACL SETUSER <user> resetchannels &oqron:*`."
        ) from exc


def check_eviction_policy(client: redis.Redis, where: str, *, enforce: bool) -> None:
    """Refuse a Redis that may evict keys, unless told to allow it.

    Under any policy but ``noeviction`` Redis drops keys when it runs out of memory, and
    the volatile-* policies pick keys with a TTL, i.e. locks and leases first. Losing one
    loses a claim (a job runs twice) or a lock (two leaders). Managed services often
    disable CONFIG; then the policy cannot be read, which is logged and accepted.
    """
    try:
        found = client.config_get("maxmemory-policy")
    except redis.ResponseError as exc:  # CONFIG renamed or disabled, or NOPERM under ACLs
        logger.warning(
            "cannot read maxmemory-policy of Redis at %s (%s); make sure it is noeviction, "
            "or evicted keys will lose job claims and locks", where, exc,
            extra={"action": "redis.eviction_unchecked"},
        )
        return
    policy = found.get("maxmemory-policy", "noeviction")
    if policy == "noeviction":
        return
    message = (
        f"Redis at {where} has maxmemory-policy {policy!r}; OqronKit needs 'noeviction'. Under "
        "any other policy Redis evicts keys when memory runs short, and an evicted key loses "
        "job claims, leases and locks (jobs run twice or stall, two leaders run the "
        "scheduler). Run `CONFIG SET maxmemory-policy noeviction` (and set it in redis.conf), "
        "and put caches that should be evicted in another Redis instance. To start anyway, "
        'set OQRON = {"ALLOW_REDIS_EVICTION": True}.'
    )
    if enforce:
        raise ConfigurationError(message)
    logger.warning("%s Starting anyway (ALLOW_REDIS_EVICTION).", message,
                   extra={"action": "redis.eviction_allowed"})
