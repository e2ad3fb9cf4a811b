"""Publishing: the retained log's records, partitions, options, idempotency keys."""

from __future__ import annotations

import threading

import pytest

from oqronkit import Engine
from oqronkit.errors import ConfigurationError, InvalidJob
from oqronkit.topics import log


def test_publish_appends_a_message_with_the_spec_keys(engine: Engine):
    orders = engine.topic("orders")
    first = orders.publish({"n": 1}, key="k1", headers={"h": "v"}, correlation_id="c1")
    second = orders.publish({"n": 2})
    messages = log.read(engine.durable, "orders", 0, after=-1, limit=10)
    assert [m.id for m in messages] == [first, second]
    value = messages[0].value
    assert set(value) == {"id", "topic", "key", "partition", "offset", "publishedAt", "payload", "headers",
                          "correlationId", "idempotencyKey"}
    assert (value["topic"], value["key"], value["partition"], value["offset"], value["payload"]) == \
        ("orders", "k1", 0, 0, {"n": 1})
    assert value["headers"] == {"h": "v"} and value["correlationId"] == "c1" and value["idempotencyKey"] is None
    assert messages[0].record_kind == "message" and messages[1].value["offset"] == 1
    assert engine.durable.get("topic", "orders").value["partitions"] == 1
    assert engine.durable.get("topic_state", "orders").value["paused"] is False


def test_publish_many_spreads_over_partitions_and_one_key_keeps_one_partition(engine: Engine):
    t = engine.topic("spread", partitions=4)
    ids = t.publish_many([{"payload": i, "key": f"user-{i % 3}"} for i in range(30)] + list(range(8)))
    assert len(ids) == 38 and len(set(ids)) == 38
    by_key: dict[str, set[int]] = {}
    total = 0
    for p in range(4):
        for m in log.read(engine.durable, "spread", p, after=-1, limit=100):
            total += 1
            if m.value["key"] is not None:
                by_key.setdefault(m.value["key"], set()).add(p)
    assert total == 38
    assert all(len(parts) == 1 for parts in by_key.values())
    assert log.next_offsets(engine.durable, "spread", 4) == [
        len(log.read(engine.durable, "spread", p, after=-1, limit=100)) for p in range(4)]


@pytest.mark.parametrize("options", [
    {"key": ""}, {"key": 5}, {"headers": {"a": 1}}, {"headers": "x"}, {"delay": -1}, {"nope": 1},
    {"correlation_id": "a\x00b"}, {"idempotency_key": "x" * 201},
])
def test_bad_publish_options_are_clear_errors_and_publish_nothing(engine: Engine, options):
    t = engine.topic("strict")
    with pytest.raises(InvalidJob):
        t.publish({"n": 1}, **options)
    assert log.read(engine.durable, "strict", 0, after=-1, limit=10) == []


def test_payloads_that_cannot_be_stored_are_refused(engine: Engine):
    t = engine.topic("sizes", max_message_bytes=100)
    with pytest.raises(InvalidJob, match="over the 100-byte limit"):
        t.publish("x" * 200)
    with pytest.raises(InvalidJob, match="not JSON"):
        t.publish({1, 2})
    assert log.read(engine.durable, "sizes", 0, after=-1, limit=10) == []


@pytest.mark.parametrize("options", [{"partitions": 0}, {"partitions": 1000},
                                     {"ordering": "sorted"}, {"retention_count": 0}])
def test_bad_topic_options_are_refused_at_declaration(engine: Engine, options):
    with pytest.raises(ConfigurationError):
        engine.topic("bad", **options)


@pytest.mark.parametrize("name", ["", "a:b", "a@b", "a b", "-x", "x" * 65, None])
def test_bad_topic_names_are_refused(engine: Engine, name):
    with pytest.raises(ConfigurationError):
        engine.topic(name)


def test_fifty_concurrent_publishers_of_one_idempotency_key_make_one_message(engine: Engine):
    t = engine.topic("once", partitions=3)
    got: list[str] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(50)

    def publisher() -> None:
        try:
            barrier.wait()
            got.append(t.publish({"order": 7}, idempotency_key="order-7"))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=publisher) for _ in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(got) == 50 and len(set(got)) == 1
    messages = [m for p in range(3) for m in log.read(engine.durable, "once", p, after=-1, limit=100)]
    assert [m.id for m in messages] == [got[0]] and messages[0].value["idempotencyKey"] == "order-7"
    assert sum(log.next_offsets(engine.durable, "once", 3)) == 1  # no offset burnt by the losers


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("payload", [{"s": "a\x00b"}, {"s": "\ud800"}, float("nan"), {"deep": nested(300)}],
                         ids=["nul", "surrogate", "nan", "deep"])
def test_payloads_no_plane_stores_alike_are_refused_before_anything_is_written(engine: Engine, payload):
    t = engine.topic("odd")
    with pytest.raises(InvalidJob):
        t.publish(payload)
    assert log.read(engine.durable, "odd", 0, after=-1, limit=10) == []
