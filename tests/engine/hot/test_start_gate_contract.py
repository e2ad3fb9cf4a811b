"""The hot plane's start gate (``HotPlane.start_limited``, issue 34): a rate-limited
queue's handler starts, logged right before they begin, never exceed the rate in any
window, whatever the delay between each claim and its start. Every backend passes these
tests unchanged (explicit clocks, out-of-order callers, 20 threads at once)."""

from __future__ import annotations

import random
import threading

from oqronkit.backends.claim_limits import ClaimLimits, LimitedStart, LimitState, admit

from .test_claim_limits_contract import LEASE, NOW, fill, take


def start(hot, scope, leases, rate: tuple[int, int], now: int, queue: str = "q") -> LimitedStart:
    return hot.start_limited(scope, queue, tokens=[le.token for le in leases], now=now, rate=rate)


def most_in_window(times: list[int], window: int) -> int:
    times = sorted(times)
    return max((sum(1 for t in times[i:] if t - first < window) for i, first in enumerate(times)), default=0)


def test_a_start_within_its_claims_window_passes_at_its_own_time(hot, scope):
    fill(hot, scope, 10)
    rate = (3, 1000)
    leases = take(hot, scope, ClaimLimits(rate=rate)).leases
    assert len(leases) == 3
    assert [start(hot, scope, [le], rate, NOW + delay).at for le, delay in zip(leases, (10, 20, 999), strict=True)] \
        == [NOW + 10, NOW + 20, NOW + 999]
    # The starts replaced the claims in the log: the next claim waits for the first start.
    held = take(hot, scope, ClaimLimits(rate=rate), now=NOW + 1000)
    assert held.leases == [] and held.retry_at == NOW + 1010
    assert len(take(hot, scope, ClaimLimits(rate=rate), now=NOW + 1010).leases) == 1


def test_starts_later_than_their_claims_never_bunch(hot, scope):
    """The issue's case: claims spaced by the window, starts delayed by different amounts."""
    fill(hot, scope, 10)
    rate = (1, 1000)
    [first] = take(hot, scope, ClaimLimits(rate=rate)).leases
    assert start(hot, scope, [first], rate, NOW + 20).at == NOW + 20  # a slow durable read
    assert take(hot, scope, ClaimLimits(rate=rate), now=NOW + 1000).retry_at == NOW + 1020
    [second] = take(hot, scope, ClaimLimits(rate=rate), now=NOW + 1020).leases
    assert start(hot, scope, [second], rate, NOW + 1021).at == NOW + 1021  # a fast one: still 1000 ms apart


def test_a_start_whose_claim_left_the_window_waits_for_room(hot, scope):
    fill(hot, scope, 10)
    rate = (2, 1000)
    a, b = take(hot, scope, ClaimLimits(rate=rate)).leases
    assert start(hot, scope, [a], rate, NOW + 5).at == NOW + 5
    [c] = take(hot, scope, ClaimLimits(rate=rate), now=NOW + 1000).leases  # b's claim left the window
    assert start(hot, scope, [c], rate, NOW + 1001).at == NOW + 1001
    late = start(hot, scope, [b], rate, NOW + 1002)  # b's start, 1002 ms after its claim: a and c fill it
    assert late == LimitedStart(None, NOW + 1005)
    assert start(hot, scope, [b], rate, NOW + 1004).at is None
    assert start(hot, scope, [b], rate, NOW + 1005).at == NOW + 1005


def test_a_refused_start_logs_nothing(hot, scope):
    fill(hot, scope, 10)
    rate = (2, 1000)
    a, b = take(hot, scope, ClaimLimits(rate=rate)).leases
    assert start(hot, scope, [a, b], rate, NOW + 1).at == NOW + 1
    extra = hot.claim(scope, "q", worker_id="w", limit=1, lease_ms=LEASE, now=NOW + 2)  # never logged
    for i in range(3):
        assert start(hot, scope, extra, rate, NOW + 3 + i) == LimitedStart(None, NOW + 1001)
    # Only a and b are in the log: a claim allowed three finds room for one.
    assert len(take(hot, scope, ClaimLimits(rate=(3, 1000)), now=NOW + 10).leases) == 1


def test_the_log_never_goes_back_in_time(hot, scope):
    """A caller that read its clock before another's entry was logged starts at that entry's time."""
    fill(hot, scope, 10)
    rate = (5, 1000)
    a, b = take(hot, scope, ClaimLimits(rate=rate), limit=2).leases
    assert start(hot, scope, [a], rate, NOW + 50).at == NOW + 50
    assert start(hot, scope, [b], rate, NOW + 40).at == NOW + 50
    [c] = take(hot, scope, ClaimLimits(rate=rate), limit=1, now=NOW + 30).leases  # logged at NOW + 50 too
    assert start(hot, scope, [c], rate, NOW + 45).at == NOW + 50


def test_a_group_starts_together_or_not_at_all(hot, scope):
    fill(hot, scope, 10)
    rate = (3, 1000)
    group = take(hot, scope, ClaimLimits(rate=rate)).leases
    assert start(hot, scope, group, rate, NOW + 7).at == NOW + 7
    assert start(hot, scope, group, rate, NOW + 9).at == NOW + 9  # again (a retried call): moved, not added
    # Two leases claimed by a plain claim (never logged) do not fit beside the three.
    extra = hot.claim(scope, "q", worker_id="w", limit=2, lease_ms=LEASE, now=NOW + 10)
    assert start(hot, scope, extra, rate, NOW + 10) == LimitedStart(None, NOW + 1009)
    assert start(hot, scope, extra[:1], rate, NOW + 1008).at is None
    assert start(hot, scope, extra, rate, NOW + 1009).at == NOW + 1009


def test_queues_have_their_own_gates(hot, scope):
    for queue in ("a", "b"):
        fill(hot, scope, 2, queue=queue)
        [lease] = take(hot, scope, ClaimLimits(rate=(1, 1000)), limit=1, queue=queue).leases
        assert start(hot, scope, [lease], (1, 1000), NOW + 1, queue=queue).at == NOW + 1


def test_random_delays_and_clocks_never_exceed_the_rate(hot, scope):
    """Claims and starts interleaved at random, with random claim-to-start delays (some
    longer than the window) and callers whose clocks lag: the logged starts hold the rate."""
    rng = random.Random(34)
    rate = (4, 200)
    fill(hot, scope, 300)
    clock, pending, started = NOW, [], []
    for _ in range(400):
        clock += rng.choice((0, 1, 3, 10, 40))
        if rng.random() < 0.5:
            got = take(hot, scope, ClaimLimits(rate=rate), limit=rng.randint(1, 3), now=clock - rng.randint(0, 5))
            pending.extend(got.leases)
        elif pending:
            lease = pending.pop(rng.randrange(len(pending)))
            now = clock - rng.randint(0, 5)
            answer = start(hot, scope, [lease], rate, now)
            if answer.at is None:
                assert answer.retry_at is not None and answer.retry_at > now
                pending.append(lease)
            else:
                started.append(answer.at)
    assert len(started) > 50
    assert most_in_window(started, 200) <= 4


def test_twenty_threads_never_start_more_than_the_rate(hot, scope):
    rate = (5, 100)
    fill(hot, scope, 200)
    started: list[int] = []
    begin = threading.Barrier(20)

    def worker(n: int) -> None:
        rng = random.Random(n)
        begin.wait(10)
        for step in range(6):
            now = NOW + step * 30 + rng.randint(0, 20)
            for lease in take(hot, scope, ClaimLimits(rate=rate), limit=2, now=now).leases:
                later = now + rng.choice((0, 2, 150))  # some start after their claim left the window
                answer = start(hot, scope, [lease], rate, later)
                if answer.at is not None:
                    started.append(answer.at)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert started and most_in_window(started, 100) <= 5


def test_the_arithmetic_reads_a_log_without_tokens():
    """An older worker's log (times only) still counts; its entries belong to no lease."""
    state = LimitState.loads('{"s": [1000, 1500], "h": {}}')
    assert state.starts == [(1000, 0), (1500, 0)]
    assert admit(state, (2, 1000), tokens=[7], now=1600) == LimitedStart(None, 2000)
    assert admit(state, (2, 1000), tokens=[7], now=2000).at == 2000
    assert LimitState.loads(state.dumps()) == state
