"""Topic retention: by age and by count per partition, in bounded batches; a delivery
in flight whose message is pruned runs from its snapshot."""

from __future__ import annotations

from oqronkit import Engine
from oqronkit.clock import now_ms
from oqronkit.topics import log
from oqronkit.topics.retention import prune_topics

from .conftest import running, wait_until


def offsets(engine: Engine, topic: str, partition: int = 0) -> list[int]:
    return [r.value["offset"] for r in log.read(engine.durable, topic, partition, after=-1, limit=1000)]


def test_retention_by_count_keeps_each_partitions_newest(engine: Engine):
    t = engine.topic("counted", partitions=2, retention_count=3)
    t.publish_many([{"payload": n, "key": f"k{n % 7}"} for n in range(20)])
    sizes = [len(offsets(engine, "counted", p)) for p in range(2)]
    assert sum(sizes) == 20
    assert prune_topics(engine.durable, batch=4) == sum(min(max(s - 3, 0), 4) for s in sizes)  # bounded per pass
    while prune_topics(engine.durable, batch=4):
        pass
    for p, next_offset in enumerate(log.next_offsets(engine.durable, "counted", 2)):
        assert offsets(engine, "counted", p) == list(range(next_offset - 3, next_offset))


def test_retention_by_age_removes_old_messages_only(engine: Engine):
    t = engine.topic("aged", retention=60)
    t.publish_many(list(range(5)))
    assert prune_topics(engine.durable, now=now_ms() + 30_000) == 0
    assert prune_topics(engine.durable, now=now_ms() + 61_000) == 5
    assert offsets(engine, "aged") == []
    assert t.publish(5) and offsets(engine, "aged") == [5]  # offsets are not reused


def test_a_delivery_whose_message_was_pruned_runs_from_its_snapshot(engine: Engine):
    t = engine.topic("snap", retention=60)
    got: list[tuple[str, object]] = []
    t.subscribe("g", start_from="earliest")(lambda ctx: got.append((ctx.message.id, ctx.data)))
    queue = t.group_queue("g")
    queue.pause()  # deliveries are handed to the group's queue but do not run yet
    mid = t.publish({"order": 1})
    with running(engine):
        wait_until(lambda: queue.get_job(mid) is not None, timeout=20)
        prune_topics(engine.durable, now=now_ms() + 120_000)
        assert offsets(engine, "snap") == []
        queue.resume()
        wait_until(lambda: got == [(mid, {"order": 1})], timeout=20)
