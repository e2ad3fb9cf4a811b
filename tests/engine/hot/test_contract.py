"""The hot plane's contract: every backend passes these tests unchanged."""

from __future__ import annotations

import threading
import time

from oqronkit.backends.hot_types import Lease, Signal
from oqronkit.backends.types import Scope

NOW = 1_700_000_000_000
LEASE = 30_000


def claim_ids(hot, scope, queue="q", limit=100, now=NOW, worker="w1") -> list[str]:
    return [lease.job_id for lease in hot.claim(scope, queue, worker_id=worker, limit=limit, lease_ms=LEASE, now=now)]


def test_fifo_order_within_priority_and_highest_priority_first(hot, scope):
    hot.signal(scope, "q", [Signal("a"), Signal("b"), Signal("hi", priority=5), Signal("c"),
                            Signal("lo", priority=-3)], NOW)
    assert claim_ids(hot, scope) == ["hi", "a", "b", "c", "lo"]


def test_lifo_reverses_enqueue_order_within_priority(hot, scope):
    hot.signal(scope, "q", [Signal(x, lifo=True) for x in "abc"], NOW)
    hot.signal(scope, "q", [Signal("p", priority=1, lifo=True)], NOW)
    assert claim_ids(hot, scope) == ["p", "c", "b", "a"]


def test_claim_respects_limit_and_hands_each_job_out_once(hot, scope):
    hot.signal(scope, "q", [Signal(f"j{i}") for i in range(5)], NOW)
    first = claim_ids(hot, scope, limit=3)
    second = claim_ids(hot, scope, limit=3)
    assert first == ["j0", "j1", "j2"] and second == ["j3", "j4"]
    assert claim_ids(hot, scope) == []


def test_signal_is_idempotent(hot, scope):
    hot.signal(scope, "q", [Signal("a"), Signal("a")], NOW)
    hot.signal(scope, "q", [Signal("a", priority=9)], NOW)
    assert claim_ids(hot, scope) == ["a"]
    hot.signal(scope, "q", [Signal("a")], NOW)  # leased: left alone
    assert claim_ids(hot, scope) == []


def test_delayed_jobs_hold_no_lease_and_become_claimable_when_due(hot, scope):
    hot.signal(scope, "q", [Signal("later", run_at=NOW + 5_000), Signal("now")], NOW)
    assert claim_ids(hot, scope) == ["now"]
    d = hot.depths(scope, "q", NOW)
    assert (d.ready, d.delayed, d.active) == (0, 1, 1)
    assert hot.next_due(scope, "q") == NOW + 5_000
    assert claim_ids(hot, scope, now=NOW + 4_999) == []
    assert claim_ids(hot, scope, now=NOW + 5_000) == ["later"]
    assert hot.next_due(scope, "q") is None


def test_due_jobs_keep_their_priority(hot, scope):
    hot.signal(scope, "q", [Signal("plain"), Signal("urgent", priority=3, run_at=NOW + 10)], NOW)
    assert claim_ids(hot, scope, now=NOW + 10) == ["urgent", "plain"]


def test_released_and_prioritised_jobs_are_always_claimable(hot, scope):
    """The reference toolkit strands jobs re-queued without delay or with a priority."""
    hot.signal(scope, "q", [Signal("a", priority=2)], NOW)
    [lease] = hot.claim(scope, "q", worker_id="w", limit=1, lease_ms=LEASE, now=NOW)
    assert hot.release(scope, "q", lease, Signal("a", priority=2), NOW) is True
    assert claim_ids(hot, scope) == ["a"]


def test_tokens_strictly_increase(hot, scope):
    hot.signal(scope, "q", [Signal("a"), Signal("b")], NOW)
    tokens = [lease.token for lease in hot.claim(scope, "q", worker_id="w", limit=2, lease_ms=LEASE, now=NOW)]
    hot.signal(scope, "q", [Signal("c")], NOW)
    tokens += [lease.token for lease in hot.claim(scope, "q", worker_id="w", limit=1, lease_ms=LEASE, now=NOW)]
    assert tokens == sorted(tokens) and len(set(tokens)) == 3


def test_ack_and_release_need_the_current_token(hot, scope):
    hot.signal(scope, "q", [Signal("a")], NOW)
    [lease] = hot.claim(scope, "q", worker_id="w", limit=1, lease_ms=LEASE, now=NOW)
    stale = Lease("a", lease.token - 1, lease.expires_at)
    assert hot.ack(scope, "q", [stale]) == set()
    assert hot.release(scope, "q", stale, Signal("a"), NOW) is False
    assert hot.ack(scope, "q", [lease]) == {"a"}
    assert hot.ack(scope, "q", [lease]) == set()
    assert hot.depths(scope, "q", NOW).active == 0


def test_expired_lease_goes_to_exactly_one_rescuer_and_zombie_cannot_ack(hot, scope):
    hot.signal(scope, "q", [Signal("a"), Signal("b")], NOW)
    leases = hot.claim(scope, "q", worker_id="w", limit=2, lease_ms=LEASE, now=NOW)
    assert hot.take_expired(scope, "q", now=NOW + LEASE - 1, limit=10) == []
    taken = hot.take_expired(scope, "q", now=NOW + LEASE, limit=10)
    assert sorted(lease.job_id for lease in taken) == ["a", "b"]
    assert hot.take_expired(scope, "q", now=NOW + LEASE, limit=10) == []
    hot.signal(scope, "q", [Signal("a")], NOW + LEASE)
    [new] = hot.claim(scope, "q", worker_id="w2", limit=1, lease_ms=LEASE, now=NOW + LEASE)
    assert new.token > leases[0].token
    assert hot.ack(scope, "q", [leases[0]]) == set()  # the zombie's token is fenced off
    assert hot.extend(scope, "q", [leases[0]], lease_ms=LEASE, now=NOW + LEASE) == []
    assert hot.ack(scope, "q", [new]) == {"a"}


def test_extend_renews_held_leases(hot, scope):
    hot.signal(scope, "q", [Signal("a")], NOW)
    [lease] = hot.claim(scope, "q", worker_id="w", limit=1, lease_ms=LEASE, now=NOW)
    [renewed] = hot.extend(scope, "q", [lease], lease_ms=LEASE, now=NOW + 20_000)
    assert renewed.token == lease.token and renewed.expires_at == NOW + 20_000 + LEASE
    assert hot.take_expired(scope, "q", now=NOW + LEASE, limit=10) == []
    assert len(hot.take_expired(scope, "q", now=NOW + 20_000 + LEASE, limit=10)) == 1


def test_extend_recreates_a_lease_the_plane_lost(hot, scope):
    lost = Lease("ghost", 41, NOW)
    [kept] = hot.extend(scope, "q", [lost], lease_ms=LEASE, now=NOW)
    assert kept.token == 41
    assert hot.present(scope, "q", ["ghost"]) == {"ghost"}
    assert hot.ack(scope, "q", [kept]) == {"ghost"}


def test_release_with_delay_moves_to_due_set(hot, scope):
    hot.signal(scope, "q", [Signal("a")], NOW)
    [lease] = hot.claim(scope, "q", worker_id="w", limit=1, lease_ms=LEASE, now=NOW)
    assert hot.release(scope, "q", lease, Signal("a", run_at=NOW + 2_000), NOW)
    assert claim_ids(hot, scope, now=NOW + 1_000) == []
    assert claim_ids(hot, scope, now=NOW + 2_000) == ["a"]


def test_remove_promote_present(hot, scope):
    hot.signal(scope, "q", [Signal("r"), Signal("d", run_at=NOW + 60_000), Signal("x")], NOW)
    [lease] = hot.claim(scope, "q", worker_id="w", limit=1, lease_ms=LEASE, now=NOW)
    assert lease.job_id == "r"
    assert hot.present(scope, "q", ["r", "d", "x", "nope"]) == {"r", "d", "x"}
    assert hot.remove(scope, "q", ["x", "r", "nope"]) == {"x"}  # leased jobs are not removed
    assert hot.promote(scope, "q", "x", NOW) is False
    assert hot.promote(scope, "q", "d", NOW) is True
    assert claim_ids(hot, scope) == ["d"]
    assert hot.present(scope, "q", ["x"]) == set()


def test_depths(hot, scope):
    hot.signal(scope, "q", [Signal("a"), Signal("b"), Signal("c", run_at=NOW + 100)], NOW)
    hot.claim(scope, "q", worker_id="w", limit=1, lease_ms=LEASE, now=NOW)
    d = hot.depths(scope, "q", NOW)
    assert (d.ready, d.delayed, d.active) == (1, 1, 1)
    d = hot.depths(scope, "q", NOW + 100)
    assert (d.ready, d.delayed, d.active) == (2, 0, 1)


def test_depths_of_several_queues_at_once(hot, scope):
    """The facade's depths_many: batched where the backend has it, per queue otherwise,
    with the same numbers as depths() and zeros for an empty queue."""
    from oqronkit.hot import HotPlaneFacade

    hot.signal(scope, "q", [Signal("a"), Signal("b"), Signal("c", run_at=NOW + 100)], NOW)
    hot.claim(scope, "q", worker_id="w", limit=1, lease_ms=LEASE, now=NOW)
    hot.signal(scope, "r", [Signal("x")], NOW)
    hot.signal(Scope(scope.project, scope.environment + "-other"), "q", [Signal("elsewhere")], NOW)
    facade = HotPlaneFacade(hot, project=scope.project, environment=scope.environment)
    many = facade.depths_many(["q", "r", "empty"], NOW)
    assert {name: (d.ready, d.delayed, d.active) for name, d in many.items()} == {
        "q": (1, 1, 1), "r": (1, 0, 0), "empty": (0, 0, 0)}
    assert facade.depths_many([], NOW) == {}


def test_concurrent_claimers_never_share_a_job(hot, scope):
    hot.signal(scope, "q", [Signal(f"j{i}") for i in range(200)], NOW)
    got: list[list[str]] = []
    barrier = threading.Barrier(4)

    def claimer(n: int) -> None:
        barrier.wait()
        mine: list[str] = []
        while True:
            batch = claim_ids(hot, scope, limit=7, worker=f"w{n}")
            if not batch:
                break
            mine.extend(batch)
        got.append(mine)

    threads = [threading.Thread(target=claimer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    everything = [j for mine in got for j in mine]
    assert len(everything) == 200 and len(set(everything)) == 200


def test_concurrent_rescuers_split_expired_leases(hot, scope):
    hot.signal(scope, "q", [Signal(f"j{i}") for i in range(60)], NOW)
    hot.claim(scope, "q", worker_id="w", limit=60, lease_ms=LEASE, now=NOW)
    got: list[str] = []
    lock = threading.Lock()

    def rescuer() -> None:
        while batch := hot.take_expired(scope, "q", now=NOW + LEASE, limit=5):
            with lock:
                got.extend(lease.job_id for lease in batch)

    threads = [threading.Thread(target=rescuer) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == sorted(f"j{i}" for i in range(60))


def test_wait_wakes_on_signal_from_another_thread(hot, scope):
    def later() -> None:
        time.sleep(0.2)
        hot.signal(scope, "wake", [Signal("a")], NOW)

    threading.Thread(target=later).start()
    started = time.monotonic()
    assert hot.wait(scope, ["wake"], 5.0) is True
    assert time.monotonic() - started < 3.0
    assert claim_ids(hot, scope, queue="wake") == ["a"]


def test_wait_times_out_when_idle(hot, scope):
    started = time.monotonic()
    hot.wait(scope, ["idle"], 0.3)
    assert time.monotonic() - started < 3.0


def test_locks_and_leader_election(hot, scope):
    assert hot.acquire_lock(scope, "leader", "n1", ttl_ms=1_000, now=NOW)
    assert not hot.acquire_lock(scope, "leader", "n2", ttl_ms=1_000, now=NOW + 500)
    assert hot.acquire_lock(scope, "leader", "n1", ttl_ms=1_000, now=NOW + 900)  # renew
    assert hot.lock_owner(scope, "leader", NOW + 1_800) == "n1"
    assert not hot.acquire_lock(scope, "leader", "n2", ttl_ms=1_000, now=NOW + 1_800)
    assert hot.acquire_lock(scope, "leader", "n2", ttl_ms=1_000, now=NOW + 1_900)  # lapsed
    assert hot.release_lock(scope, "leader", "n1") is False
    assert hot.release_lock(scope, "leader", "n2") is True
    assert hot.lock_owner(scope, "leader", NOW + 1_900) is None


def test_counters(hot, scope):
    assert hot.incr(scope, "done") == 1
    assert hot.incr(scope, "done", 4) == 5
    assert hot.get_counters(scope, ["done", "other"]) == {"done": 5, "other": 0}


def test_concurrent_incr_loses_nothing(hot, scope):
    def bump() -> None:
        for _ in range(50):
            hot.incr(scope, "n")

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert hot.get_counters(scope, ["n"]) == {"n": 200}


def test_ephemeral_keys_expire(hot, scope):
    hot.kv_set(scope, "workers", {"w1": '{"a":1}', "w2": "x"}, ttl_ms=1_000, now=NOW)
    hot.kv_set(scope, "workers", {"w3": "y"}, ttl_ms=5_000, now=NOW)
    assert hot.kv_get(scope, "workers", ["w1", "zz"], NOW + 500) == {"w1": '{"a":1}'}
    assert hot.kv_all(scope, "workers", NOW + 500) == {"w1": '{"a":1}', "w2": "x", "w3": "y"}
    hot.kv_delete(scope, "workers", ["w2"])
    assert hot.kv_all(scope, "workers", NOW + 500) == {"w1": '{"a":1}', "w3": "y"}
    assert hot.kv_all(scope, "workers", NOW + 1_000) == {"w3": "y"}
    assert hot.kv_all(scope, "other", NOW) == {}


def test_scopes_and_queues_are_isolated(hot, scope):
    other = Scope(scope.project, "production")
    hot.signal(scope, "q", [Signal("a")], NOW)
    hot.signal(other, "q", [Signal("b")], NOW)
    hot.signal(scope, "q2", [Signal("c")], NOW)
    hot.acquire_lock(scope, "leader", "n1", ttl_ms=1_000, now=NOW)
    hot.incr(scope, "c")
    hot.kv_set(scope, "g", {"k": "v"}, ttl_ms=1_000, now=NOW)
    assert claim_ids(hot, other) == ["b"]
    assert claim_ids(hot, scope) == ["a"]
    assert hot.acquire_lock(other, "leader", "n2", ttl_ms=1_000, now=NOW)
    assert hot.get_counters(other, ["c"]) == {"c": 0}
    assert hot.kv_all(other, "g", NOW) == {}
    assert hot.take_expired(other, "q", now=NOW + LEASE, limit=10)[0].job_id == "b"


def test_a_recreated_token_is_never_handed_out_again(hot, scope):
    [kept] = hot.extend(scope, "q", [Lease("ghost", 10_000, NOW)], lease_ms=LEASE, now=NOW)
    hot.signal(scope, "q", [Signal("next")], NOW)
    [lease] = hot.claim(scope, "q", worker_id="w", limit=1, lease_ms=LEASE, now=NOW)
    assert lease.token > kept.token


def test_release_must_name_the_leased_job(hot, scope):
    import pytest

    hot.signal(scope, "q", [Signal("a")], NOW)
    [lease] = hot.claim(scope, "q", worker_id="w", limit=1, lease_ms=LEASE, now=NOW)
    with pytest.raises(ValueError):
        hot.release(scope, "q", lease, Signal("b"), NOW)
