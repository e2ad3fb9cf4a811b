"""The leader keeps the queue depths a board asked for counted, on a thread of its own;
a follower never counts them."""

from __future__ import annotations

from oqronkit import Engine, OqronConfig, Registry
from oqronkit.services.kept_depths import keep_depths, read_depths
from oqronkit.services.leader import Services


def test_the_leader_counts_the_depths_a_reader_asked_for_and_a_follower_does_not():
    engine = Engine(OqronConfig(mode="memory"), registry=Registry())
    try:
        engine.queue("emails").add({"n": 1})
        leader, follower = Services(engine, worker_id="w1"), Services(engine, worker_id="w2")
        leader.tick()
        follower.tick()
        assert leader._depths is not None and follower._depths is None
        leader._depths.join(10)
        assert keep_depths(engine.hot) == 0  # nobody asked: nothing counted
        assert not read_depths(engine.hot, ["emails"], max_age_ms=2_000).kept  # a board asks
        leader._last["depths"] = 0.0
        leader.tick()
        leader._depths.join(10)
        read = read_depths(engine.hot, ["emails"], max_age_ms=2_000)
        assert read.kept and read.depths["emails"].ready == 1
        leader.resign()
    finally:
        engine.close()
