"""A publish wakes its topic's dispatchers: with their idle poll far longer than the
test, a message still reaches its handler within a short bound, in every mode whose hot
plane can broadcast (SQLite's cannot: there the poll alone finds it, as the other
topic tests show)."""

from __future__ import annotations

import time

import pytest

from oqronkit import Engine
from oqronkit.topics import groups

from .conftest import running, wait_until

POLL = 60.0  # the dispatcher's idle poll: no delivery in this test may come from it
BOUND = 1.5  # publish to handler start, generous for a loaded 2-core CI machine


def test_a_publish_wakes_the_dispatcher_instead_of_its_poll(engine: Engine):
    if not engine.hot.supports_broadcast:
        pytest.skip(f"{engine.hot.plane.name}: no broadcast, the poll is the only way")
    t = engine.topic("woken", partitions=2)
    started: list[float] = []
    t.subscribe("g")(lambda ctx: started.append(time.monotonic()))
    t.subscribe("h")(lambda ctx: started.append(time.monotonic()))
    with running(engine, topic_poll_interval=POLL):
        # Both groups exist once the first pass ran, which follows the subscriptions' confirmation.
        wait_until(lambda: all(groups.load(engine.durable, "woken", g) for g in ("g", "h")), timeout=10)
        time.sleep(0.3)  # the dispatcher is asleep on its 60 s poll now
        for n in range(3):
            sent = time.monotonic()
            if n < 2:
                t.publish({"n": n}, key=f"k{n}")
            else:
                t.publish_many([{"n": n}, {"n": n + 1}])
            want = 2 * (n + 1) if n < 2 else 8
            wait_until(lambda want=want: len(started) >= want, timeout=BOUND * 4)
            assert max(started) - sent < BOUND, f"publish {n}: {max(started) - sent:.2f} s to the last handler"
            time.sleep(0.2)
    assert len(started) == 8
