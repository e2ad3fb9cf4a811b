"""Prefetch: how many jobs a worker claims beyond its running ones, adaptive or fixed."""

from __future__ import annotations

import threading

from oqronkit import Engine
from oqronkit.worker.prefetch import MAX_PER_SLOT, START_PER_SLOT, WINDOW, Prefetch

from .conftest import running, wait_until


def test_adaptive_size_starts_small_and_follows_the_handler_time():
    p = Prefetch(concurrency=5, fixed=None)
    assert p.size == START_PER_SLOT * 5
    for _ in range(200):
        p.observe(0.0001)  # fast jobs: the per-slot cap sets the size
    assert p.size == MAX_PER_SLOT * 5
    for _ in range(400):
        p.observe(0.01)  # 10 ms jobs: WINDOW of work per slot
    assert p.size == round(5 * WINDOW / 0.01)
    for _ in range(400):
        p.observe(2.0)  # slow jobs: never below one
    assert p.size == 1


def test_fixed_size_ignores_the_handler_time():
    for fixed in (0, 7):
        p = Prefetch(concurrency=3, fixed=fixed)
        for _ in range(50):
            p.observe(0.0001)
        assert p.size == fixed


def _held_while_one_runs(engine: Engine, **options) -> tuple[int, int]:
    """(active, waiting) counts while a concurrency-1 queue's first handler blocks."""
    release, started = threading.Event(), threading.Event()

    def work(ctx):
        started.set()
        release.wait(10)

    q = engine.queue("held", handler=work, concurrency=1, **options)
    q.add_bulk([{"n": n} for n in range(10)])
    with running(engine):
        assert started.wait(10)
        try:
            wait_until(lambda: q.counts()["active"] >= 1)
            counts = q.counts()
        finally:
            release.set()
        wait_until(lambda: engine.durable.count("queue_job:held") == 0, timeout=20)
    return counts["active"], counts["waiting"]


def test_prefetch_zero_claims_only_what_runs(engine: Engine):
    assert _held_while_one_runs(engine, prefetch=0) == (1, 9)


def test_fixed_prefetch_holds_that_many_beyond_the_running_job(engine: Engine):
    assert _held_while_one_runs(engine, prefetch=3) == (4, 6)


def test_claims_come_in_batches_of_at_most_claim_batch(engine: Engine, monkeypatch):
    from oqronkit.worker import consumer

    monkeypatch.setattr(consumer, "CLAIM_BATCH", 4)
    limits: list[int] = []

    def counting(claim):
        def counted(*args, **kwargs):
            limits.append(kwargs["limit"])
            return claim(*args, **kwargs)
        return counted

    monkeypatch.setattr(engine.hot, "claim", counting(engine.hot.claim))
    if hasattr(engine.durable.store, "claim_and_read"):  # redis and postgres modes: the claim with its read
        monkeypatch.setattr(engine.durable.store, "claim_and_read", counting(engine.durable.store.claim_and_read))
    q = engine.queue("batched", handler=lambda ctx: None, concurrency=2, prefetch=20)
    q.add_bulk([{"n": n} for n in range(30)])
    with running(engine):
        wait_until(lambda: engine.durable.count("queue_job:batched") == 0, timeout=20)
    assert limits and max(limits) == 4

