"""The Redis key layout of both backends, in one place.

Every key starts with the scope prefix ``oqron:<project>:<environment>:``. What follows
the prefix says which family the key belongs to, and the families can never produce the
same key text:

=========================================================  ==================================
``{<p>:<e>:<queue>}:<part>``                               a queue's claim structures
``lock:<name>``                                            a lock (leader election, ...)
``counter:{<p>:<e>}:<name>``                               a counter (INCRBY)
``kv:{<p>:<e>:kv:<group>}:values`` / ``:expiry``           an ephemeral group
``durable:{<p>:<e>:durable}:<part>``                       the durable store (store.py)
``rate:<len(name)>:<name>:<key>``                          a rate limiter's state of one key
``ratelog:{<that key's slot text>}:<period>:...``          its exact sliding window's log
``broadcast:<channel>``                                     a pub/sub channel (broadcast.py)
=========================================================  ==================================

The ``{...}`` hash tag gives every key that one script touches the same Redis Cluster
slot: a queue's keys share ``{<p>:<e>:<queue>}`` (a queue name may hold any character:
a hash tag ends at the first '}', and every key of one queue has the same text up to
there; no suffix contains "}:", so two queues never share a key), counters share one
slot so MGET reads them at once, and the durable store keeps a scope in one slot because
apply() and compare_and_set() are atomic across its namespaces. Project and environment
names hold no ':', '{' or '}' (config.py). A lock is one key per call and needs no tag. A
rate limiter's key has no tag of its own (older releases named it so), and its logs carry
as their tag the text Redis hashes for it, so they share its slot (see ``rate_keys``). On
a Redis Cluster (connection.py) every script and pipelined read thus touches one slot,
and queues spread over the masters; a wake-up channel carries its queue's tag, so a
script may SPUBLISH to it (sharded.py): Redis refuses a script's shard channel outside
its keys' slot.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ..types import Scope

#: Locks and ephemeral groups also get a Redis TTL (ttl + this grace) so keys nobody
#: renews disappear; validity itself is judged on the callers' clock, and the grace
#: covers skew between that clock and the server's.
GC_GRACE_MS = 60_000


def scope_prefix(scope: Scope) -> str:
    return f"oqron:{scope.project}:{scope.environment}:"


@dataclass(frozen=True, slots=True)
class QueueKeys:
    """The keys (and the wake-up channel) of one queue."""

    ready: str  # zset: job id -> packed (priority, sequence) score
    delayed: str  # zset: job id -> run_at
    meta: str  # hash: delayed job id -> "<priority>|<lifo>"
    leases: str  # hash: job id -> "<token>|<worker>"
    expiry: str  # zset: job id -> lease expiry
    seq: str  # string: enqueue sequence
    token: str  # string: last fencing token
    starts: str  # zset: lease token -> claim time (the rate limit's log)
    held: str  # hash: minute start -> claims held back by the queue's limits
    channel: str  # pub/sub channel (not a key) the queue's wake-ups go to


def queue_prefix(scope: Scope, queue: str) -> str:
    """What every key of ``queue`` starts with (insert_and_signal.lua names them from it)."""
    return f"{scope_prefix(scope)}{{{scope.project}:{scope.environment}:{queue}}}:"


@lru_cache(maxsize=4096)
def queue_keys(scope: Scope, queue: str) -> QueueKeys:
    base = queue_prefix(scope, queue)
    return QueueKeys(*(base + part for part in ("ready", "delayed", "meta", "leases", "expiry", "seq", "token",
                                                "starts", "held", "wake")))


def lock_key(scope: Scope, name: str) -> str:
    return f"{scope_prefix(scope)}lock:{name}"


def counter_key(scope: Scope, name: str) -> str:
    return f"{scope_prefix(scope)}counter:{{{scope.project}:{scope.environment}}}:{name}"


def kv_keys(scope: Scope, group: str) -> tuple[str, str]:
    base = f"{scope_prefix(scope)}kv:{{{scope.project}:{scope.environment}:kv:{group}}}:"
    return base + "values", base + "expiry"


def broadcast_channel(scope: Scope, channel: str) -> str:
    """A pub/sub channel (not a key) of ``broadcast``/``listen``."""
    return f"{scope_prefix(scope)}broadcast:{channel}"


def durable_base(scope: Scope) -> str:
    return f"{scope_prefix(scope)}durable:{{{scope.project}:{scope.environment}:durable}}:"


def _slot_text(key: str) -> str:
    """What Redis Cluster hashes for ``key``: the first ``{...}`` if it holds something,
    else the whole key."""
    start = key.find("{")
    end = key.find("}", start + 1) if start >= 0 else -1
    return key[start + 1:end] if end > start + 1 else key


def rate_keys(scope: Scope, name: str, key: str, periods: tuple[int, ...]) -> tuple[str, ...]:
    """A rate limiter's keys for one key (rate_hit.lua's KEYS): its state hash, then one
    log per tier (by period; only an exact sliding window writes one).

    The hash keeps the name older releases gave it (bans and overrides outlive an
    upgrade), and each log's hash tag is the text Redis hashes for the hash, so a check
    touches one slot. A hash whose text holds a '}' but no tag cannot be wrapped in
    braces: such a key (a name or key with a '}' before any '{') gets a tagged hash
    instead, and starts over once."""
    prefix = scope_prefix(scope)
    # The name's length keeps ("a:b", "c") and ("a", "b:c") apart.
    state = f"{prefix}rate:{len(name)}:{name}:{key}"
    slot = _slot_text(state)
    if "}" in slot:
        state = f"{prefix}rate:{{{len(name)}:{name}:{key}}}"
        slot = _slot_text(state)
    return (state, *(f"{prefix}ratelog:{{{slot}}}:{period}:{len(name)}:{name}:{key}" for period in periods))
