"""ordering="key": one message of a key at a time per group, in offset order, across
retries; other keys flow past a key held back by a failing message."""

from __future__ import annotations

import itertools
import threading
import time

from oqronkit import Engine

from .conftest import running, wait_until


def test_messages_of_one_key_run_one_at_a_time_in_offset_order(engine: Engine):
    t = engine.topic("seq", partitions=2, ordering="key")
    spans: list[tuple[str, int, float, float]] = []
    lock = threading.Lock()

    def handle(ctx):
        began = time.monotonic()
        time.sleep(0.01)
        with lock:
            spans.append((ctx.message.key, ctx.message.offset, began, time.monotonic()))

    t.subscribe("g", start_from="earliest", concurrency=6)(handle)
    t.publish_many([{"payload": n, "key": f"k{n % 4}"} for n in range(40)])
    with running(engine):
        wait_until(lambda: len(spans) == 40, timeout=40)
    for key in {s[0] for s in spans}:
        mine = sorted((s for s in spans if s[0] == key), key=lambda s: s[2])
        assert [s[1] for s in mine] == sorted(s[1] for s in mine), key  # offset order
        assert all(a[3] <= b[2] for a, b in itertools.pairwise(mine)), key  # never two at once
    assert engine.durable.count("queue_job:seq@g") == 0


def test_a_failing_message_holds_back_its_key_and_the_other_keys_flow(engine: Engine):
    t = engine.topic("held", ordering="key")
    done: list[tuple[str, int]] = []
    attempts: dict[int, int] = {}

    def handle(ctx):
        n = ctx.data
        attempts[n] = attempts.get(n, 0) + 1
        if n == 1 and attempts[n] < 3:  # a's second message fails twice, then succeeds
            raise RuntimeError("not yet")
        done.append((ctx.message.key, n))

    t.subscribe("g", start_from="earliest", retries=3, backoff=0.3)(handle)
    t.publish_many([{"payload": 0, "key": "a"}, {"payload": 1, "key": "a"}, {"payload": 2, "key": "a"},
                    {"payload": 3, "key": "b"}, {"payload": 4, "key": "b"}])
    with running(engine):
        wait_until(lambda: len(done) == 5, timeout=30)
    assert [n for k, n in done if k == "a"] == [0, 1, 2]
    assert [n for k, n in done if k == "b"] == [3, 4]
    assert done.index(("b", 4)) < done.index(("a", 1))  # b was not held back by a's retries
    assert attempts[1] == 3
