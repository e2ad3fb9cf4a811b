"""``HotPlane.sample``, the plane drift's bounded look at a queue: every backend passes
these tests unchanged."""

from __future__ import annotations

from oqronkit.backends.hot_types import Signal
from oqronkit.backends.types import Scope

NOW = 1_700_000_000_000
LEASE = 30_000


def test_sample_names_ready_delayed_and_leased_ids_and_the_leases_lapsing_first(hot, scope):
    hot.signal(scope, "q", [Signal("r1"), Signal("r2"), Signal("d1", run_at=NOW + 60_000)], NOW)
    hot.signal(scope, "q", [Signal("a"), Signal("b")], NOW)
    short = hot.claim(scope, "q", worker_id="w", limit=2, lease_ms=LEASE, now=NOW)
    long = hot.claim(scope, "q", worker_id="w", limit=1, lease_ms=LEASE * 2, now=NOW)
    sample = hot.sample(scope, "q", limit=10)
    assert set(sample.entries) == {"r1", "r2", "d1", "a", "b"}
    assert len(sample.entries) == len(set(sample.entries))
    # Earliest expiry first, each with its token and expiry.
    assert list(sample.leases) == sorted([*short, *long], key=lambda lease: (lease.expires_at, lease.job_id))
    assert [lease.expires_at for lease in sample.leases] == [NOW + LEASE, NOW + LEASE, NOW + 2 * LEASE]


def test_sample_is_bounded_per_structure(hot, scope):
    hot.signal(scope, "q", [Signal(f"r{i}") for i in range(20)], NOW)
    hot.signal(scope, "q", [Signal(f"d{i}", run_at=NOW + 1000 + i) for i in range(20)], NOW)
    hot.claim(scope, "q", worker_id="w", limit=8, lease_ms=LEASE, now=NOW)
    sample = hot.sample(scope, "q", limit=3)
    assert len(sample.leases) == 3
    # At most `limit` of each of ready, delayed and leased.
    assert 3 <= len(sample.entries) <= 9
    assert {lease.job_id for lease in sample.leases} <= set(sample.entries)
    assert hot.sample(scope, "q", limit=0).entries == ()


def test_sample_sees_lapsed_leases_and_nothing_after_they_are_taken(hot, scope):
    hot.signal(scope, "q", [Signal("x")], NOW)
    [lease] = hot.claim(scope, "q", worker_id="w", limit=1, lease_ms=LEASE, now=NOW)
    assert hot.sample(scope, "q", limit=5).leases == (lease,)
    assert hot.take_expired(scope, "q", now=NOW + LEASE, limit=5) == [lease]
    sample = hot.sample(scope, "q", limit=5)
    assert sample.entries == () and sample.leases == ()


def test_sample_keeps_to_its_queue_and_scope(hot, scope):
    other = Scope(scope.project, scope.environment + "-other")
    hot.signal(scope, "q", [Signal("mine")], NOW)
    hot.signal(scope, "q2", [Signal("next door")], NOW)
    hot.signal(other, "q", [Signal("elsewhere")], NOW)
    assert hot.sample(scope, "q", limit=10).entries == ("mine",)
    assert hot.sample(scope, "empty", limit=10).entries == ()
