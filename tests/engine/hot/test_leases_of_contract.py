"""The recovery read of the hot plane's contract (leases_of) and the worker take_expired
names: every backend passes these unchanged. A worker whose claim or ack got no reply
asks leases_of what it holds; the rescuer asks take_expired whose lease lapsed."""

from __future__ import annotations

from oqronkit.backends.claim_limits import ClaimLimits
from oqronkit.backends.hot_types import Lease, Signal

NOW = 1_700_000_000_000
LEASE = 30_000


def test_leases_of_lists_every_lease_of_one_worker_and_nothing_else(hot, scope):
    hot.signal(scope, "q", [Signal(f"j{i}") for i in range(6)], NOW)
    mine = hot.claim(scope, "q", worker_id="w1", limit=3, lease_ms=LEASE, now=NOW)
    theirs = hot.claim(scope, "q", worker_id="w2", limit=2, lease_ms=LEASE, now=NOW)
    hot.signal(scope, "other", [Signal("x")], NOW)
    hot.claim(scope, "other", worker_id="w1", limit=1, lease_ms=LEASE, now=NOW)

    found = hot.leases_of(scope, "q", "w1")
    assert found == mine  # job ids and tokens, in token order
    assert [lease.expires_at for lease in found] == [NOW + LEASE] * 3
    assert all(lease.worker == "w1" for lease in found)
    assert hot.leases_of(scope, "q", "w2") == theirs
    assert hot.leases_of(scope, "q", "nobody") == []
    assert hot.leases_of(scope, "empty", "w1") == []


def test_leases_of_follows_ack_release_and_renewal_and_keeps_expired_leases(hot, scope):
    hot.signal(scope, "q", [Signal("a"), Signal("b"), Signal("c")], NOW)
    a, b, c = hot.claim(scope, "q", worker_id="w1", limit=3, lease_ms=LEASE, now=NOW)
    assert hot.ack(scope, "q", [a]) == {"a"}
    assert hot.release(scope, "q", b, Signal("b"), NOW)
    [renewed] = hot.extend(scope, "q", [c], lease_ms=LEASE, now=NOW + 5_000)
    assert hot.leases_of(scope, "q", "w1") == [renewed]
    assert renewed.token == c.token and renewed.expires_at == NOW + 5_000 + LEASE
    # Lapsed but not yet taken by a rescuer: still listed, the worker's to settle.
    assert hot.take_expired(scope, "q", now=NOW + 4_000 + LEASE, limit=10) == []
    assert hot.leases_of(scope, "q", "w1") == [renewed]
    assert hot.take_expired(scope, "q", now=NOW + 5_000 + LEASE, limit=10) == [renewed]
    assert hot.leases_of(scope, "q", "w1") == []


def test_a_lost_acks_resend_finds_nothing_held(hot, scope):
    """The recovery of an ack whose reply was lost: it ran, so leases_of lists nothing and
    acking again changes nothing (ack is idempotent under its token)."""
    hot.signal(scope, "q", [Signal("a")], NOW)
    [a] = hot.claim(scope, "q", worker_id="w1", limit=1, lease_ms=LEASE, now=NOW)
    assert hot.ack(scope, "q", [a]) == {"a"}
    assert hot.leases_of(scope, "q", "w1") == []
    assert hot.ack(scope, "q", [a]) == set()
    assert hot.depths(scope, "q", NOW).active == 0


def test_leases_of_lists_limited_claims(hot, scope):
    hot.signal(scope, "q", [Signal("a"), Signal("b")], NOW)
    got = hot.claim_limited(scope, "q", worker_id="w1", limit=5, lease_ms=LEASE, now=NOW,
                            limits=ClaimLimits(concurrency=1, rate=None))
    assert [lease.job_id for lease in got.leases] == ["a"]
    assert hot.leases_of(scope, "q", "w1") == got.leases


def test_take_expired_names_the_worker_of_each_lease(hot, scope):
    hot.signal(scope, "q", [Signal("a"), Signal("b")], NOW)
    hot.claim(scope, "q", worker_id="w1", limit=1, lease_ms=LEASE, now=NOW)
    hot.claim(scope, "q", worker_id="w2", limit=1, lease_ms=LEASE, now=NOW + 1)
    hot.extend(scope, "q", [Lease("ghost", 99, NOW)], lease_ms=LEASE, now=NOW + 2)  # re-created: no worker
    taken = hot.take_expired(scope, "q", now=NOW + 2 * LEASE, limit=10)
    assert [(lease.job_id, lease.worker) for lease in taken] == [("a", "w1"), ("b", "w2"), ("ghost", "")]
