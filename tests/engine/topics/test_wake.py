"""A publish wakes its topic's dispatchers: with their idle poll far longer than the
test, a message still reaches its handler within a short bound, in every mode whose hot
plane can broadcast (SQLite's cannot: there the poll alone finds it, as the other
topic tests show)."""

from __future__ import annotations

import dataclasses
import time

import pytest

from oqronkit import Engine, Registry
from oqronkit.topics import groups, log
from tests.engine.queue.conftest import make_config

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


def test_a_hot_plane_that_is_down_never_fails_a_publish_and_slows_one_at_most(request, tmp_path, scope_names):
    """redis-postgres with nothing listening at the Redis address: publishing needs only
    Postgres; the first wake fails (after the backend wait), then none is tried for a while."""
    config = dataclasses.replace(make_config("postgres", request, tmp_path, scope_names[0]), mode="redis-postgres",
                                 redis_url="redis://127.0.0.1:1/0", backend_wait=1.0)
    engine = Engine(config, registry=Registry())
    try:
        t = engine.topic("unwoken")
        first = t.publish({"n": 0})
        started = time.monotonic()
        more = [t.publish({"n": n}) for n in range(1, 20)]
        assert time.monotonic() - started < 1.0  # no wake tried: no backend wait
        assert [r.id for r in log.read(engine.durable, "unwoken", 0, after=-1, limit=50)] == [first, *more]
    finally:
        engine.close()
