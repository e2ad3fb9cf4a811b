"""Claims on a Redis Cluster that survive a failover: the claim script and a WAIT for
the slot's replicas go down one connection to the slot's master.

Replication is asynchronous. A claim the killed master had not yet sent to its replica
is gone once the replica is promoted: the job is back in the ready set with the fencing
token counter rolled back, and a second worker claims it (under the same token) while
the first still runs it. WAIT after the claim, on the connection that ran it, returns
once the replicas hold the claim, so the worker starts the job only after that. WAIT
needs the connection that wrote, which the cluster client's pooled commands do not
guarantee; hence the per-node pipeline here.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

import redis
from redis.cluster import RedisCluster
from redis.commands.core import Script
from redis.crc import key_slot
from redis.exceptions import AskError, ConnectionError, NoScriptError, TimeoutError

logger = logging.getLogger(__name__)

#: How long a master's replica count is trusted: a new replica is waited for this soon.
REPLICAS_TTL_S = 5.0
_counts: dict[str, tuple[float, int]] = {}
_counts_lock = threading.Lock()
#: Longest wait for the replicas (ms): a replica that is down but not yet marked failed
#: holds a claim this long, then the claim goes ahead with a warning.
WAIT_MS = 500


def run_replicated(client: RedisCluster, script: Script, keys: Sequence[str], args: Sequence[Any]) -> Any:
    """Run ``script`` on the master of ``keys`` (one slot), then WAIT for its replicas.

    A MOVED or ASK reply means the script did not run: the topology is read again and the
    call goes to the new owner (at most twice; then the error is raised). NOSCRIPT also
    means it did not run: the script is loaded on every master and sent again.
    """
    for attempt in range(3):
        slot = key_slot(keys[0].encode())
        nodes = client.nodes_manager.slots_cache.get(slot) or []
        if not nodes:
            client.nodes_manager.initialize()
            continue
        node = client.get_redis_connection(nodes[0])
        try:
            replicas = _replicas(nodes[0].name, node)
            pipe = node.pipeline(transaction=False)
            pipe.evalsha(script.sha, len(keys), *keys, *args)
            if replicas:
                pipe.wait(replicas, WAIT_MS)
            reply, *acked = pipe.execute()
        except (ConnectionError, TimeoutError):
            # Not retried (it may have run: the worker asks leases_of), but the next call must find the new master.
            with contextlib.suppress(Exception):
                client.nodes_manager.initialize()
            raise
        except NoScriptError:
            script.sha = client.script_load(script.script)
            continue
        except AskError:  # MOVED too: the slot has moved (failover, resharding)
            if attempt == 2:
                raise
            client.nodes_manager.initialize()
            continue
        if acked and int(acked[0]) < replicas:
            logger.warning("a claim reached %s of %s replicas within %s ms; a failover now may lose it",
                           acked[0], replicas, WAIT_MS, extra={"action": "redis.claim_unreplicated"})
        return reply
    raise AskError(f"slot {key_slot(keys[0].encode())} kept moving")


def _replicas(name: str, node: redis.Redis) -> int:
    """How many replicas the master ``name`` streams to, asked at most every few seconds.

    Not from CLUSTER SLOTS: Redis 7.0 leaves a replica out of it until gossip has carried
    a replication offset, so a fresh cluster would show none."""
    now = time.monotonic()
    with _counts_lock:
        known = _counts.get(name)
    if known is not None and known[0] > now:
        return known[1]
    count = int(node.info("replication").get("connected_slaves", 0))
    with _counts_lock:
        _counts[name] = (now + REPLICAS_TTL_S, count)
    return count
