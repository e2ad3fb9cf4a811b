"""The hot plane's limited claim (cluster-wide queue limits): every backend passes these
tests unchanged (exact limits, window edges on an explicit clock, the held-back count,
atomicity under 20 threads)."""

from __future__ import annotations

import threading

from oqronkit.backends.claim_limits import ClaimLimits
from oqronkit.backends.hot_types import Signal

NOW = 1_700_000_040_000  # a minute's start: held counts fall in one bucket
LEASE = 30_000


def fill(hot, scope, n: int, queue: str = "q") -> None:
    hot.signal(scope, queue, [Signal(f"j{i:03d}") for i in range(n)], NOW - 1)


def take(hot, scope, limits: ClaimLimits, *, limit: int = 10, now: int = NOW, queue: str = "q",
         lease_ms: int = LEASE):
    return hot.claim_limited(scope, queue, worker_id="w", limit=limit, lease_ms=lease_ms, now=now, limits=limits)


def test_global_concurrency_counts_live_leases(hot, scope):
    fill(hot, scope, 10)
    limits = ClaimLimits(concurrency=3)
    first = take(hot, scope, limits)
    assert [le.job_id for le in first.leases] == ["j000", "j001", "j002"]
    assert first.held and first.retry_at is None  # a concurrency hold frees on an ack, not at a time
    assert take(hot, scope, limits).leases == []
    assert hot.ack(scope, "q", first.leases[:2]) == {"j000", "j001"}
    assert [le.job_id for le in take(hot, scope, limits).leases] == ["j003", "j004"]
    assert take(hot, scope, limits).leases == []


def test_an_expired_lease_no_longer_counts(hot, scope):
    fill(hot, scope, 4)
    limits = ClaimLimits(concurrency=2)
    assert len(take(hot, scope, limits, lease_ms=1000).leases) == 2
    assert take(hot, scope, limits, now=NOW + 999).leases == []
    assert len(take(hot, scope, limits, now=NOW + 1000).leases) == 2  # expiry at now: not live


def test_plain_claims_count_toward_the_concurrency(hot, scope):
    fill(hot, scope, 5)
    hot.claim(scope, "q", worker_id="other", limit=2, lease_ms=LEASE, now=NOW)
    assert len(take(hot, scope, ClaimLimits(concurrency=3)).leases) == 1


def test_rate_limit_window_edges_are_exact(hot, scope):
    fill(hot, scope, 10)
    limits = ClaimLimits(rate=(2, 1000))
    assert len(take(hot, scope, limits, limit=1).leases) == 1
    assert len(take(hot, scope, limits, now=NOW + 400).leases) == 1
    denied = take(hot, scope, limits, now=NOW + 999)
    assert denied.leases == [] and denied.held and denied.retry_at == NOW + 1000
    freed = take(hot, scope, limits, now=NOW + 1000)  # the start at NOW left the window
    assert len(freed.leases) == 1 and freed.held and freed.retry_at == NOW + 1400
    assert take(hot, scope, limits, now=NOW + 1399).leases == []
    assert len(take(hot, scope, limits, now=NOW + 1400).leases) == 1


def test_rate_limit_takes_at_most_the_room_in_one_claim(hot, scope):
    fill(hot, scope, 10)
    limits = ClaimLimits(rate=(4, 60_000))
    got = take(hot, scope, limits, limit=10)
    assert len(got.leases) == 4 and got.held and got.retry_at == NOW + 60_000
    assert [le.token for le in got.leases] == list(range(got.leases[0].token, got.leases[0].token + 4))


def test_both_limits_apply_the_tighter(hot, scope):
    fill(hot, scope, 10)
    limits = ClaimLimits(concurrency=2, rate=(3, 1000))
    got = take(hot, scope, limits)
    assert len(got.leases) == 2 and got.held and got.retry_at is None
    hot.ack(scope, "q", got.leases)
    got = take(hot, scope, limits, now=NOW + 1)
    assert len(got.leases) == 1 and got.retry_at == NOW + 1000  # the rate binds now


def test_no_hold_without_waiting_jobs(hot, scope):
    fill(hot, scope, 2)
    limits = ClaimLimits(concurrency=2, rate=(2, 1000))
    got = take(hot, scope, limits)
    assert len(got.leases) == 2 and not got.held
    empty = take(hot, scope, limits)
    assert empty.leases == [] and not empty.held and empty.retry_at is None
    assert hot.limit_held(scope, "q", NOW) == 0


def test_held_back_claims_are_counted_for_an_hour(hot, scope):
    fill(hot, scope, 5)
    limits = ClaimLimits(concurrency=1)
    assert take(hot, scope, limits).held  # took one, four left waiting: cut short
    for i in range(3):
        assert take(hot, scope, limits, now=NOW + i).held
    assert take(hot, scope, limits, now=NOW + 120_000).held
    assert hot.limit_held(scope, "q", NOW + 120_000) == 5
    assert hot.limit_held(scope, "other", NOW) == 0
    assert hot.limit_held(scope, "q", NOW + 3_600_000 + 59_999) == 5  # the first minute still overlaps
    assert hot.limit_held(scope, "q", NOW + 3_600_000 + 60_000) == 1
    assert hot.limit_held(scope, "q", NOW + 3_600_000 + 180_000) == 0


def test_delayed_jobs_come_due_inside_a_limited_claim(hot, scope):
    hot.signal(scope, "q", [Signal("later", run_at=NOW + 500)], NOW)
    assert take(hot, scope, ClaimLimits(rate=(1, 1000))).leases == []
    assert [le.job_id for le in take(hot, scope, ClaimLimits(rate=(1, 1000)), now=NOW + 500).leases] == ["later"]


def test_queues_are_limited_apart(hot, scope):
    fill(hot, scope, 3, queue="a")
    fill(hot, scope, 3, queue="b")
    limits = ClaimLimits(concurrency=1, rate=(1, 1000))
    assert len(take(hot, scope, limits, queue="a").leases) == 1
    assert len(take(hot, scope, limits, queue="b").leases) == 1


def hammer_from_twenty_threads(hot, scope, limits: ClaimLimits, *, ack: bool) -> list[str]:
    fill(hot, scope, 200)
    claimed: list[str] = []
    start = threading.Barrier(20)

    def hammer() -> None:
        start.wait(10)
        for i in range(5):
            got = take(hot, scope, limits, limit=2, now=NOW + i)
            claimed.extend(le.job_id for le in got.leases)
            if ack:
                hot.ack(scope, "q", got.leases)

    threads = [threading.Thread(target=hammer) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(claimed) == len(set(claimed))  # nothing handed out twice
    return claimed


def test_twenty_threads_never_exceed_the_global_concurrency(hot, scope):
    claimed = hammer_from_twenty_threads(hot, scope, ClaimLimits(concurrency=15), ack=False)
    assert len(claimed) == 15 and hot.depths(scope, "q", NOW).active == 15


def test_twenty_threads_never_exceed_the_rate(hot, scope):
    # Acks free every lease at once: only the rate's log can stop them, exactly at its limit.
    claimed = hammer_from_twenty_threads(hot, scope, ClaimLimits(concurrency=50, rate=(25, 60_000)), ack=True)
    assert len(claimed) == 25


def test_an_unreadable_limit_state_counts_as_empty():
    from oqronkit.backends.claim_limits import LimitState

    assert LimitState.loads('{"s": [3, 1], "h": {"60000": 2}}') == LimitState([(1, 0), (3, 0)], {60000: 2})
    for text in ("", None, "not json", "[1, 2]", '{"s": ["x"]}'):
        assert LimitState.loads(text) == LimitState()
